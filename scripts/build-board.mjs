/**
 * Bundles the web board (web/board) into dist/board/static with esbuild, at build time: the package
 * carries the page whole, and nothing is fetched from a CDN or the internet when it runs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const source = path.join(root, 'web', 'board');
const out = path.join(root, 'dist', 'board', 'static');
fs.mkdirSync(out, { recursive: true });
await build({
  entryPoints: [path.join(source, 'main.tsx')],
  outfile: path.join(out, 'board.js'),
  bundle: true, minify: true, format: 'esm', target: 'es2022', jsx: 'automatic', jsxImportSource: 'preact',
  legalComments: 'linked', logLevel: 'warning',
});
for (const file of ['index.html', 'locked.html', 'board.css', 'favicon.svg']) fs.copyFileSync(path.join(source, file), path.join(out, file));
