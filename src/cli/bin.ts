#!/usr/bin/env node
/**
 * The `baton` command's entry. `baton --version`, which scripts and HEARTBEAT checks call to see what is
 * installed, answers from package.json before the command tree loads; every other call runs main.ts.
 */
import module from 'node:module';
import { version } from './package.js';

// Node keeps what it compiled of the command and the chunks it loads for the next call (a cron job or a
// HEARTBEAT script calls the CLI again and again): its compile cache, in the system's temporary folder
// (NODE_DISABLE_COMPILE_CACHE=1 turns it off). Enabled here, before the command's own module loads.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
const words = process.argv.slice(2);
if (words.length === 1 && (words[0] === '--version' || words[0] === '-V')) process.stdout.write(`${version}\n`);
else await import('./main.js');
