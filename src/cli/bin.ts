#!/usr/bin/env node
/**
 * The `baton` command's entry. `baton --version`, which scripts and HEARTBEAT checks call to see what is
 * installed, answers from package.json before the command tree loads; every other call runs main.ts.
 */
import module from 'node:module';
import { versionLine } from '../package.js';

// Node keeps what it compiled of the command and the chunks it loads for the next call (a cron job or a
// HEARTBEAT script calls the CLI again and again): its compile cache, in the system's temporary folder
// (NODE_DISABLE_COMPILE_CACHE=1 turns it off). Enabled here, before the command's own module loads.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
const words = process.argv.slice(2);
if (words.length === 1 && (words[0] === '--version' || words[0] === '-V')) process.stdout.write(`${versionLine()}\n`);
else {
  // A call that sends a request or two and exits makes the few schemas it uses when it uses them, and
  // parses each kind of answer once or twice, where zod's compiled parsers (built on an object schema's
  // first parse) cost it more than they save: about 40 ms of `baton show` together. A serving call (a
  // daemon, a server) keeps both. Set before the command's modules make their schemas.
  const { serving } = await import('./serving.js');
  if (!serving(process.argv)) {
    (await import('zod')).z.config({ jitless: true });
    (await import('../on-demand.js')).schemasOnDemand();
  }
  await import('./main.js');
}
