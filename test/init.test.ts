/** `baton init`: a folder set up in one command, locally or against a project, and never over a file that is there. */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import dotenv from 'dotenv';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/stack/ports.js';
import { baton } from './cli.js';
import { makeStackDir, removeStackFolder } from './global-setup.js';
import { stack } from './helpers.js';
import { agentKeyEnv, legacyKeys, operatorEnv } from './keys-mode.js';

/** Nothing from the test's own environment: the folder and the test decide. */
const blank = { SUPABASE_PUBLISHABLE_KEY: '', SUPABASE_ANON_KEY: '', SUPABASE_SECRET_KEY: '', SUPABASE_SERVICE_ROLE_KEY: '', BATON_SIGNING_KEY: '', SUPABASE_JWT_SECRET: '', BATON_STACK_DIR: '', BATON_ENV_FILE: '', BATON_API_PORT: '', BATON_DB_PORT: '' };

const folders: string[] = [];
afterAll(async () => {
  for (const dir of folders) {
    await baton(['stack', 'stop'], blank, dir);
    removeStackFolder(dir);
  }
});

describe('baton init', () => {
  it('starts a stack here on a free port where the default is taken, writes its settings for the owner alone, and leaves them as they are when run again', async () => {
    const dir = makeStackDir('baton-init-');
    folders.push(dir);
    // The default API port taken (by this test, or by whatever holds it already); the database's given.
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.once('error', () => resolve()).listen(54321, '127.0.0.1', () => resolve()));
    try {
      const dbPort = await freePort([54321]);
      const first = await baton(['init', '--db-port', String(dbPort), '--json'], blank, dir);
      expect(first.code, first.stderr).toBe(0);
      const file = path.join(dir, '.env');
      expect(JSON.parse(first.stdout)).toMatchObject({ written: file });
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const settings = dotenv.parse(fs.readFileSync(file));
      expect(settings.BATON_DB_PORT).toBe(String(dbPort));
      expect(settings.BATON_API_PORT).not.toBe('54321');
      expect(settings.SUPABASE_URL).toBe(`http://127.0.0.1:${settings.BATON_API_PORT}`);

      const doctor = await baton(['doctor', '--json'], blank, dir);
      expect(doctor.code, doctor.stdout).toBe(0);
      expect(JSON.parse(doctor.stdout).find((f: { check: string }) => f.check === 'operator').verdict).toBe('ok');

      const before = fs.readFileSync(file, 'utf8');
      const again = await baton(['init'], blank, dir);
      expect(again.code).toBe(2);
      expect(again.stderr).toMatch(/\.env exists already; it is left as it is — This folder may be set up already \(baton doctor checks it\)/);
      expect(fs.readFileSync(file, 'utf8')).toBe(before);

      // Stopped and started again from the folder: the ports the file names, not the defaults.
      expect((await baton(['stack', 'stop'], blank, dir)).code).toBe(0);
      const restarted = await baton(['stack', 'start', '--json'], blank, dir);
      expect(restarted.code, restarted.stderr).toBe(0);
      expect(JSON.parse(restarted.stdout)).toMatchObject({ apiPort: Number(settings.BATON_API_PORT), dbPort });
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it('checks a project given by --url with the keys in the environment, and refuses one without its publishable key', async () => {
    const dir = makeStackDir('baton-init-hosted-');
    folders.push(dir);
    const keyless = await baton(['init', '--url', stack.SUPABASE_URL], blank, dir);
    expect(keyless.code).toBe(2);
    expect(keyless.stderr).toMatch(/needs the project's publishable key — Set SUPABASE_PUBLISHABLE_KEY/);
    expect(fs.existsSync(path.join(dir, '.env'))).toBe(false);

    const keys = { ...blank, ...agentKeyEnv(stack), ...operatorEnv(stack) };
    const made = await baton(['init', '--url', stack.SUPABASE_URL], keys, dir);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toContain(`${stack.SUPABASE_URL} answers and takes the keys; Baton's schema is there.`);
    const settings = dotenv.parse(fs.readFileSync(path.join(dir, '.env')));
    expect(settings).toMatchObject({ SUPABASE_URL: stack.SUPABASE_URL, ...(legacyKeys ? { SUPABASE_ANON_KEY: stack.SUPABASE_ANON_KEY } : { SUPABASE_PUBLISHABLE_KEY: stack.SUPABASE_PUBLISHABLE_KEY }) });
    expect(fs.statSync(path.join(dir, '.env')).mode & 0o777).toBe(0o600);
    expect((await baton(['doctor'], blank, dir)).code).toBe(0);
  });
});
