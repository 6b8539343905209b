/**
 * Docker on a machine that can reach Debian's packages and the npm registry but no image registry:
 * installs and starts the engine if it is missing, and builds `node:20-bookworm-slim` locally (Debian
 * bookworm from debootstrap, with this machine's node and npm) if no such image is there. Elsewhere the
 * engine is already running and the image comes from the registry, and this does nothing.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const BASE_IMAGE = 'node:20-bookworm-slim';
const say = (text: string) => process.stdout.write(`${text}\n`);

/** Runs a command, its output shown; throws with its exit code if it fails. */
export function sh(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; quiet?: boolean } = {}): void {
  const result = spawnSync(command, args, { stdio: options.quiet ? 'ignore' : 'inherit', env: options.env ?? process.env, cwd: options.cwd });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
}

/** Runs a command and returns what it printed, or undefined if it failed. */
export function read(command: string, args: string[], env?: NodeJS.ProcessEnv): string | undefined {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], env: env ?? process.env });
  } catch {
    return undefined;
  }
}

const has = (command: string) => read('sh', ['-c', `command -v ${command}`]) !== undefined;

/**
 * The Docker client that builds with BuildKit (build secrets) on its own: Debian's docker.io client does;
 * a newer client without the buildx plugin does not.
 */
export function dockerClient(): string {
  if (read('docker', ['buildx', 'version']) !== undefined) return 'docker';
  return fs.existsSync('/usr/bin/docker') ? '/usr/bin/docker' : 'docker';
}

/** Makes sure an engine answers; returns the pid of the one started here (to stop at the end), if any. */
export async function ensureEngine(): Promise<number | undefined> {
  if (read('docker', ['info']) !== undefined) return undefined;
  if (!has('dockerd') || !has('docker-compose')) {
    say('Installing Docker (Debian docker.io and docker-compose)…');
    sh('apt-get', ['update', '-q']);
    sh('apt-get', ['install', '-y', '-q', 'docker.io', 'docker-compose'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  }
  say('Starting the Docker engine (dockerd --storage-driver=vfs)…');
  const log = fs.openSync(path.join(os.tmpdir(), 'baton-dockerd.log'), 'a');
  const engine = spawn('dockerd', ['--storage-driver=vfs'], { detached: true, stdio: ['ignore', log, log] });
  engine.unref();
  for (let i = 0; i < 60; i++) {
    if (read('docker', ['info']) !== undefined) return engine.pid;
    await sleep(500);
  }
  throw new Error(`the Docker engine did not answer within 30 s; see ${path.join(os.tmpdir(), 'baton-dockerd.log')}`);
}

/** Stops an engine that ensureEngine started, and waits for it to go. */
export async function stopEngine(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  for (let i = 0; i < 60; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await sleep(500);
  }
}

/** The Debian mirror apt on this machine uses (deb822 sources or the classic list). */
function debianMirror(): string {
  const sources = ['/etc/apt/sources.list.d/debian.sources', '/etc/apt/sources.list']
    .filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f, 'utf8')).join('\n');
  const mirror = sources.match(/^URIs:\s*(\S+\/debian)\s*$/m)?.[1] ?? sources.match(/^deb\s+(?:\[[^\]]*\]\s+)?(\S+\/debian)\s/m)?.[1];
  return mirror ?? 'http://deb.debian.org/debian';
}

/** Builds BASE_IMAGE from Debian bookworm and this machine's node and npm, unless it is already there. */
export function ensureBaseImage(): void {
  if (read('docker', ['image', 'inspect', BASE_IMAGE]) !== undefined) return;
  if (!has('debootstrap')) sh('apt-get', ['install', '-y', '-q', 'debootstrap'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-base-'));
  try {
    // The folder becomes the image's "/", which every user must be able to enter (mkdtemp makes it 0700).
    fs.chmodSync(root, 0o755);
    say(`Building ${BASE_IMAGE} locally: debootstrap bookworm from ${debianMirror()}…`);
    sh('debootstrap', ['--variant=minbase', 'bookworm', root, debianMirror()], { quiet: true });
    const node = fs.realpathSync(process.execPath);
    const npm = path.resolve(path.dirname(fs.realpathSync(read('sh', ['-c', 'command -v npm'])!.trim())), '..');
    fs.mkdirSync(path.join(root, 'usr/local/bin'), { recursive: true });
    fs.mkdirSync(path.join(root, 'usr/local/lib/node_modules'), { recursive: true });
    fs.copyFileSync(node, path.join(root, 'usr/local/bin/node'));
    fs.chmodSync(path.join(root, 'usr/local/bin/node'), 0o755);
    fs.cpSync(npm, path.join(root, 'usr/local/lib/node_modules/npm'), { recursive: true, verbatimSymlinks: true });
    fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(root, 'usr/local/bin/npm'));
    fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(root, 'usr/local/bin/npx'));
    // What the registry's image has and debootstrap leaves out: no apt lists, and a node user (uid 1000).
    fs.rmSync(path.join(root, 'var/lib/apt/lists'), { recursive: true, force: true });
    fs.mkdirSync(path.join(root, 'var/lib/apt/lists/partial'), { recursive: true });
    sh('chroot', [root, 'sh', '-c', 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node']);
    sh('sh', ['-c', `tar -C '${root}' -c . | docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'CMD ["node"]' - ${BASE_IMAGE}`], { quiet: true });
    say(`${BASE_IMAGE} built from ${node} (${process.version}) and npm ${read('npm', ['--version'])?.trim()}`);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}
