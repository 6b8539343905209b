/**
 * The code of the README and of docs/ stays true: every TypeScript block compiles under the project's tsconfig against
 * the built package (imported as 'baton-agents', as a user would), then runs against a stack of its own; every
 * baton.agent.json example parses as the daemon reads it.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentFileSchema } from '../src/agent/options.js';
import { createAdminClient } from '../src/client/admin.js';
import { startStack, type Stack } from '../src/stack/index.js';
import { freePort } from '../src/stack/ports.js';
import { startA2AServer, type A2AServer } from '../src/a2a/server.js';
import { silentLogger } from '../src/logger.js';
import { makeStackDir } from './global-setup.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The README and every page of docs/: the guide and the reference, whose examples must stay true. */
const pages = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => path.join('docs', f))];
const text = pages.map((page) => fs.readFileSync(path.join(root, page), 'utf8')).join('\n');
const blocks = (lang: string) => [...text.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);

function run(file: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { ...options, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) || 1 : 0, out: stdout + stderr }));
  });
}

describe('the README and docs/', () => {
  const tsBlocks = blocks('ts');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-readme-'));
  const stackDir = makeStackDir('baton-readme-stack-');
  let stack: Stack;
  let a2a: A2AServer;

  beforeAll(async () => {
    // A project of a user's: the package installed as 'baton-agents', the README's blocks as its files.
    fs.mkdirSync(path.join(work, 'node_modules'));
    fs.symlinkSync(root, path.join(work, 'node_modules', 'baton-agents'), 'dir');
    // An A2A caller installs the A2A SDK itself (docs/a2a.md).
    fs.symlinkSync(path.join(root, 'node_modules', '@a2a-js'), path.join(work, 'node_modules', '@a2a-js'), 'dir');
    fs.writeFileSync(path.join(work, 'package.json'), JSON.stringify({ type: 'module' }));
    const { compilerOptions } = JSON.parse(fs.readFileSync(path.join(root, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
    fs.writeFileSync(path.join(work, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { ...compilerOptions, rootDir: '.', outDir: 'out', declaration: false, typeRoots: [path.join(root, 'node_modules', '@types')] },
      include: ['*.ts'],
    }));
    tsBlocks.forEach((code, i) => fs.writeFileSync(path.join(work, `block${i}.ts`), code));
    const apiPort = await freePort();
    stack = await startStack({ dir: stackDir, apiPort, dbPort: await freePort([apiPort]) });
    // docs/a2a.md's client calls an agent through `baton a2a`.
    a2a = await startA2AServer({ url: stack.env.SUPABASE_URL, publishableKey: stack.env.SUPABASE_PUBLISHABLE_KEY, directory: createAdminClient({ url: stack.env.SUPABASE_URL, secretKey: stack.env.SUPABASE_SECRET_KEY }).db, log: silentLogger });
  });

  afterAll(async () => {
    await a2a?.close();
    await stack?.stop();
    fs.rmSync(work, { recursive: true, force: true });
    fs.rmSync(stackDir, { recursive: true, force: true });
  });

  it('has TypeScript examples that compile under the project\'s tsconfig', async () => {
    expect(tsBlocks.length).toBeGreaterThanOrEqual(2);
    const tsc = await run(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', work], { cwd: work });
    expect(tsc.code, tsc.out).toBe(0);
  });

  it('has examples that run as written', async () => {
    const admin = createAdminClient({ url: stack.env.SUPABASE_URL, serviceRoleKey: stack.env.SUPABASE_SERVICE_ROLE_KEY, jwtSecret: stack.env.SUPABASE_JWT_SECRET });
    await admin.createAgent({ id: 'coder', capabilities: ['code'] });
    for (const [i, code] of tsBlocks.entries()) {
      const { token } = await admin.createAgent({ id: `reader-${i}`, capabilities: ['review'] });
      const env = { ...process.env, ...stack.env, BATON_AGENT_TOKEN: token, BATON_A2A_URL: a2a.url, LOG_LEVEL: 'silent' };
      const ran = await run(process.execPath, [path.join(work, 'out', `block${i}.js`)], { cwd: work, env });
      expect(ran.code, `block ${i}:\n${code}\n${ran.out}`).toBe(0);
      if (code.includes('createBatonClient(') && code.includes('Write slugify')) {
        expect(ran.out).toMatch(/Write slugify: pending/);
        expect(ran.out).toMatch(/Review PR 12: completed/);
      }
    }
  });

  it('has baton.agent.json examples the daemon accepts', async () => {
    const configs = blocks('json').filter((b) => b.includes('"executors"'));
    expect(configs.length).toBeGreaterThanOrEqual(1);
    const schema = await agentFileSchema();
    for (const config of configs) expect(schema.safeParse(JSON.parse(config)).error).toBeUndefined();
  });
});
