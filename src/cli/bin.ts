#!/usr/bin/env node
/**
 * The `baton` command's entry. `baton --version`, which scripts and HEARTBEAT checks call to see what is
 * installed, answers from package.json before the command tree loads; every other call runs main.ts.
 */
import { version } from './package.js';

const words = process.argv.slice(2);
if (words.length === 1 && (words[0] === '--version' || words[0] === '-V')) process.stdout.write(`${version}\n`);
else await import('./main.js');
