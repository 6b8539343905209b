/** Signing keys for agent tokens: make one to import into a Supabase project, or show its public half. */
import type { Command } from 'commander';
import { configOf } from '../context.js';
import { usageError } from '../exit.js';
import { emit } from '../output.js';

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('signing keys for agent tokens (ES256 JWKs with a kid)');

  keys.command('generate')
    .description('print a new private ES256 signing key as a JWK: import it into the project, then keep it as BATON_SIGNING_KEY')
    .addHelpText('after', `
The key is printed once and stored nowhere: put it in a secret store or a file only the operator reads.
On a hosted project, import it (Project Settings → JWT Keys → import a private key) and rotate to it;
\`supabase gen signing-key --algorithm ES256\` makes the same kind of key.

Example:
  $ baton keys generate > signing-key.json && chmod 600 signing-key.json
  $ export BATON_SIGNING_KEY=signing-key.json`)
    .action(async (_opts, command: Command) => {
      const key = await (await import('../../tokens.js')).generateSigningKey();
      // One line of JSON either way: it is what the Dashboard's import and BATON_SIGNING_KEY take.
      emit({ ...configOf(command), json: false }, JSON.stringify(key), (text) => text);
    });

  keys.command('public')
    .description('print the public JWKS of BATON_SIGNING_KEY, to compare with the project\'s /auth/v1/.well-known/jwks.json')
    .addHelpText('after', `
Example:
  $ BATON_SIGNING_KEY=signing-key.json baton keys public
  $ curl -s https://<ref>.supabase.co/auth/v1/.well-known/jwks.json`)
    .action(async (_opts, command: Command) => {
      const config = configOf(command);
      if (!config.signingKey) throw usageError('BATON_SIGNING_KEY is not set', 'Set it to the private JWK (or the file holding it) from `baton keys generate`.');
      const { parseSigningKey, publicJwk } = await import('../../tokens.js');
      let key;
      try {
        key = parseSigningKey(config.signingKey, 'BATON_SIGNING_KEY');
      } catch (err) {
        throw usageError((err as Error).message, 'Set BATON_SIGNING_KEY to a private ES256 JWK.');
      }
      emit({ ...config, json: false }, JSON.stringify({ keys: [publicJwk(key)] }), (text) => text);
    });
}
