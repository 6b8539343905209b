/** Structured work: artifacts, artifact get, chain. */
import fs from 'node:fs';
import type { Command } from 'commander';
import { agentClient, configOf } from '../context.js';
import { emit } from '../output.js';
import { artifactTable, bytes, lineageTree } from '../../text/render.js';

export function registerArtifacts(program: Command): void {
  program.command('artifacts <task>')
    .description('the artifacts a task produced: names, sizes, hashes')
    .addHelpText('after', '\nExample:\n  $ baton artifacts 3f2a1b --json')
    .action(async (prefix: string, _opts, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      emit(config, await client.artifacts(await client.resolveTaskId(prefix)), artifactTable);
    });

  const artifact = program.command('artifact').description('read one artifact');
  artifact.command('get <task> <name>')
    .description('print an artifact\'s content (checked against its SHA-256), or write it to a file')
    .option('-o, --output <file>', 'write the content here instead of stdout')
    .addHelpText('after', '\nExample:\n  $ baton artifact get 3f2a1b competitors.json -o competitors.json')
    .action(async (prefix: string, name: string, opts: { output?: string }, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      const found = await client.artifact(await client.resolveTaskId(prefix), name);
      if (opts.output && found.content) {
        fs.writeFileSync(opts.output, found.content);
        const { content: _c, ...meta } = found;
        return emit(config, meta, (a) => `Wrote ${a.name} (${bytes(a.size_bytes)}, sha256 ${a.sha256}) to ${opts.output}.`);
      }
      if (config.json) {
        const { content, ...meta } = found;
        return emit(config, { ...meta, content: content?.toString('base64') ?? null, encoding: 'base64' }, () => '');
      }
      if (found.content) process.stdout.write(found.content);
      else process.stdout.write(`${found.uri}\n`);
    });

  program.command('chain <task>')
    .description('the chain a task belongs to, root to leaves: producer, inputs, outputs, status and times')
    .addHelpText('after', '\nExample:\n  $ baton chain 3f2a1b')
    .action(async (prefix: string, _opts, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      emit(config, await client.chain(await client.resolveTaskId(prefix)), lineageTree);
    });
}
