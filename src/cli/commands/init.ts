/**
 * `baton init`: a folder set up in one command. Locally, a stack started here on ports that are free
 * and its settings written to .env (readable by its owner only, the ports with them, so that a later
 * `baton stack start` comes back on the same ones); for a hosted project (--url), its keys checked
 * against it and written the same way.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { processSettings, type BatonConfig } from '../../config.js';
import { BatonError } from '../../errors.js';
import { adminClient, checkApi, cliEntry, configOf, settingsLines, writeSecretFile } from '../context.js';
import { ExitError, exitCodes, usageError } from '../exit.js';
import { emit } from '../output.js';

type Settings = Record<string, string>;

/** A port given by flag or environment is taken as it is; a default that is taken gives way to a free one. */
async function portsFor(config: BatonConfig, command: Command): Promise<{ apiPort: number; dbPort: number }> {
  const given = command.optsWithGlobals<{ apiPort?: string; dbPort?: string }>();
  const { assertPortFree, freePort } = await import('../../stack/ports.js');
  const usable = async (port: number, asked: unknown) => Boolean(asked) || assertPortFree(port, '', '').then(() => true, () => false);
  const apiPort = (await usable(config.apiPort, given.apiPort || processSettings.portAsked('apiPort'))) ? config.apiPort : await freePort([config.dbPort]);
  const dbPort = (await usable(config.dbPort, given.dbPort || processSettings.portAsked('dbPort'))) ? config.dbPort : await freePort([apiPort]);
  return { apiPort, dbPort };
}

/** A stack in this folder (started unless it runs), and the settings that reach it. */
async function local(config: BatonConfig, command: Command): Promise<{ settings: Settings; said: string }> {
  const [{ startInBackground }, { readSecrets, stackEnv }] = await Promise.all([import('../../stack/background.js'), import('../../stack/state.js')]);
  const { apiPort, dbPort } = await portsFor(config, command);
  const { alreadyRunning, runtime } = await startInBackground({ dir: config.stackDir, apiHost: config.apiHost, apiPort, dbPort, cliEntry });
  const secrets = readSecrets(config.stackDir)!;
  const settings: Settings = {
    ...stackEnv(secrets, runtime.apiPort, runtime.dbPort),
    // The ports go along, for the next `baton stack start` here.
    BATON_API_PORT: String(runtime.apiPort),
    BATON_DB_PORT: String(runtime.dbPort),
  };
  return {
    settings,
    said: `${alreadyRunning ? 'The stack here was running' : 'Started a stack'} in ${config.stackDir}: API http://127.0.0.1:${runtime.apiPort}, database port ${runtime.dbPort}.`,
  };
}

/** A hosted project: its keys, each checked against it, and Baton's schema there. */
async function hosted(config: BatonConfig): Promise<{ settings: Settings; said: string }> {
  const apiKey: Settings | undefined = config.publishableKey ? { SUPABASE_PUBLISHABLE_KEY: config.publishableKey } : config.anonKey ? { SUPABASE_ANON_KEY: config.anonKey } : undefined;
  const secret: Settings | undefined = config.secretKey ? { SUPABASE_SECRET_KEY: config.secretKey } : config.serviceRoleKey ? { SUPABASE_SERVICE_ROLE_KEY: config.serviceRoleKey } : undefined;
  if (!apiKey) {
    throw usageError(`--url ${config.url} needs the project's publishable key`,
      'Set SUPABASE_PUBLISHABLE_KEY (and SUPABASE_SECRET_KEY, to register agents from here) in the environment, from the dashboard\'s API Keys page, and run it again; keys on the command line end up in the shell\'s history.');
  }
  await checkApi({ ...config, agentToken: undefined });
  if (secret) {
    try {
      await (await adminClient(config)).listAgents();
    } catch (err) {
      if (err instanceof BatonError && /PGRST205|does not exist|schema cache/i.test(`${err.code} ${err.message}`)) {
        throw new ExitError(`${config.url} answers, but Baton's tables are not there`, exitCodes.refused,
          'Apply Baton\'s migrations to the project first: npx supabase db push (docs/hosted-supabase.md says how), then run baton init again.');
      }
      throw err;
    }
  }
  const signing: Settings = config.signingKey ? { BATON_SIGNING_KEY: config.signingKey } : config.jwtSecret ? { SUPABASE_JWT_SECRET: config.jwtSecret } : {};
  return {
    settings: { SUPABASE_URL: config.url!, ...apiKey, ...secret, ...signing },
    said: `${config.url} answers and takes the keys${secret ? '; Baton\'s schema is there' : ' (no secret key here: agents are registered where it is)'}.`,
  };
}

export function registerInit(program: Command): void {
  program.command('init')
    .description('set this folder up: start a stack here on free ports, or check a hosted project (--url, keys in the environment), and write its settings to .env, readable by you only')
    .option('--write-env <file>', 'the settings file to write; it must not exist', '.env')
    .addHelpText('after', `
Every baton command in this folder, or in one below it, then reads the file. A port you give (--api-port,
--db-port) is used as given; a default port that is taken gives way to a free one, written to the file
with the rest. Nothing is written if something fails, and an existing file is left as it is.

Example:
  $ baton init && baton doctor
  $ SUPABASE_PUBLISHABLE_KEY=sb_publishable_… SUPABASE_SECRET_KEY=sb_secret_… baton init --url https://<ref>.supabase.co`)
    .action(async (opts: { writeEnv: string }, command: Command) => {
      const config = configOf(command);
      const file = path.resolve(opts.writeEnv);
      if (fs.existsSync(file)) {
        throw usageError(`${file} exists already; it is left as it is`,
          'This folder may be set up already (baton doctor checks it); or name another file with --write-env and point BATON_ENV_FILE at it.');
      }
      const { settings, said } = config.url ? await hosted(config) : await local(config, command);
      writeSecretFile(file, settingsLines(settings));
      emit(config, { written: file, url: settings.SUPABASE_URL, settings: Object.keys(settings) }, () =>
        `${said}\nWrote ${Object.keys(settings).length} settings to ${file} (readable by you only).\nNext: baton doctor, then baton agent create <id> --write-env <file> for each agent.`);
    });
}
