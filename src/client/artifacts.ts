/** Artifact content: bytes in, bytes out, hash-checked; JSON checked against the task's expected schema. */
import crypto from 'node:crypto';
import { IntegrityError } from '../errors.js';
import type { Artifact, Task } from '../schemas.js';

export type ArtifactContent = string | Uint8Array | { json: unknown };

export interface LinkedArtifact {
  uri: string;
  sha256?: string;
  sizeBytes?: number;
  mediaType?: string;
}

/** An artifact with its content, checked against its SHA-256. */
export interface ResolvedArtifact extends Artifact {
  content: Buffer | null;
  /** The content parsed as JSON when its media type is JSON. */
  json?: unknown;
  text(): string;
}

export function toBytes(content: ArtifactContent): Buffer {
  if (typeof content === 'string') return Buffer.from(content, 'utf8');
  if (content instanceof Uint8Array) return Buffer.from(content);
  return Buffer.from(`${JSON.stringify(content.json, null, 2)}\n`, 'utf8');
}

/** Postgres' hex form of bytea, as PostgREST reads and writes it. */
export const toHex = (bytes: Buffer) => `\\x${bytes.toString('hex')}`;
export const fromHex = (hex: string) => Buffer.from(hex.startsWith('\\x') ? hex.slice(2) : hex, 'hex');

export function guessMediaType(name: string, content: ArtifactContent): string {
  if (typeof content === 'object' && !(content instanceof Uint8Array)) return 'application/json';
  const ext = name.split('.').pop()?.toLowerCase();
  return ({ json: 'application/json', md: 'text/markdown', txt: 'text/plain', csv: 'text/csv', html: 'text/html', ts: 'text/plain', js: 'text/javascript', py: 'text/x-python', yaml: 'application/yaml', yml: 'application/yaml' } as Record<string, string>)[ext ?? ''] ?? 'application/octet-stream';
}

const isJson = (mediaType: string) => /^application\/([a-z.+-]+\+)?json\b/.test(mediaType);

export function resolveArtifact(row: Artifact & { content?: string | null }): ResolvedArtifact {
  const content = row.content ? fromHex(row.content) : null;
  if (content) {
    const actual = crypto.createHash('sha256').update(content).digest('hex');
    if (actual !== row.sha256) {
      throw new IntegrityError({
        code: 'INTEGRITY',
        message: `artifact "${row.name}" of task ${row.task_id} does not match its SHA-256 (stored ${row.sha256}, content ${actual})`,
        hint: 'The stored content was changed after it was attached; ask its producer to attach it again.',
      });
    }
  }
  const { content: _hex, ...meta } = row;
  const resolved: ResolvedArtifact = { ...meta, content, text: () => content?.toString('utf8') ?? '' };
  if (content && isJson(row.media_type)) {
    try {
      resolved.json = JSON.parse(content.toString('utf8'));
    } catch { /* stays bytes */ }
  }
  return resolved;
}

