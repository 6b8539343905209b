/** Small pieces every view uses: loading, times, statuses, JSON as a tree, an action with its refusal. */
import type { ComponentChildren } from 'preact';
import { useContext, useEffect, useState } from 'preact/hooks';
import { createContext } from 'preact';
import { Refusal, type Status } from './api';

/** Bumped on every change the server pushes: views that read it load again. */
export const Changes = createContext(0);

/** What moved since the page opened, newest first: each task's changes of status as the server pushed them. */
export interface FeedEntry { at: string; id: string; status: Status }
export const Feed = createContext<FeedEntry[]>([]);

export interface Loaded<T> { data: T | undefined; error: Refusal | undefined; reload(): void }

/** Loads `fetch()` now, whenever `keys` change and whenever the server says something changed. */
export function useLoad<T>(fetch: () => Promise<T>, keys: unknown[]): Loaded<T> {
  const changes = useContext(Changes);
  const [state, setState] = useState<{ data?: T; error?: Refusal }>({});
  const [bump, setBump] = useState(0);
  useEffect(() => {
    let live = true;
    fetch().then((data) => live && setState({ data }), (error: unknown) => live && setState((s) => ({
      data: s.data, error: error instanceof Refusal ? error : new Refusal('NETWORK', String(error), 'Is baton board still running?'),
    })));
    return () => { live = false; };
  }, [...keys, changes, bump]);
  return { data: state.data, error: state.error, reload: () => setBump((b) => b + 1) };
}

export function Problem({ error }: { error: Refusal | undefined }) {
  if (!error) return null;
  return (
    <div class="problem" role="alert">
      <strong>{error.code}</strong> {error.message}
      {error.hint && <div class="hint">{error.hint}</div>}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return <p class="muted" aria-busy="true">Loading {what}…</p>;
}

const units: Array<[number, string]> = [[86_400_000, 'd'], [3_600_000, 'h'], [60_000, 'min'], [1000, 's']];
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const ms = now - Date.parse(iso);
  if (ms < 1000) return 'just now';
  const [size, unit] = units.find(([size]) => ms >= size) ?? units[3]!;
  return `${Math.floor(ms / size)} ${unit} ago`;
}

export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">—</span>;
  return <time dateTime={at} title={new Date(at).toLocaleString()}>{ago(at)}</time>;
}

export const statusLabel = (s: Status) => s.replace('_', ' ');
export function Badge({ status }: { status: Status }) {
  return <span class={`badge s-${status}`}>{statusLabel(status)}</span>;
}

/** Whom a task is for: its agent, or any agent holding its capabilities (chips, not names). */
export function Recipient({ task }: { task: { to_agent: string | null; required_capabilities: string[] } }) {
  if (task.to_agent) return <>{task.to_agent}</>;
  if (!task.required_capabilities.length) return <span class="muted">anyone</span>;
  return <span class="recipient"><span class="muted">any agent with </span>{task.required_capabilities.map((c) => <span class="chip" key={c}>{c}</span>)}</span>;
}

export const short = (id: string) => id.slice(0, 8);
export function TaskLink({ id, title }: { id: string; title?: string }) {
  return <a href={`#/task/${id}`} class="task-link"><code>{short(id)}</code>{title ? ` ${title}` : ''}</a>;
}

/** JSON as a tree of <details>: objects and arrays fold, values show in their own colour. */
export function JsonTree({ value, name, open = true }: { value: unknown; name?: string; open?: boolean }) {
  const label = name === undefined ? null : <span class="json-key">{name}: </span>;
  if (value === null || typeof value !== 'object') {
    const kind = value === null ? 'null' : typeof value;
    return <div class="json-leaf">{label}<span class={`json-${kind}`}>{JSON.stringify(value)}</span></div>;
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
  return (
    <details class="json-node" open={open}>
      <summary>{label}<span class="muted">{summary}</span></summary>
      <div class="json-children">{entries.map(([k, v]) => <JsonTree key={k} name={k} value={v} open={entries.length < 20} />)}</div>
    </details>
  );
}

/** A button that runs an action, says it is busy, and shows the refusal next to it. */
export function ActionButton({ label, run, done, kind = 'secondary' }: { label: string; run: () => Promise<unknown>; done?: () => void; kind?: 'primary' | 'secondary' | 'danger' }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Refusal>();
  const click = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await run();
      done?.();
    } catch (err) {
      setError(err instanceof Refusal ? err : new Refusal('ERROR', String(err), null));
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="action">
      <button type="button" class={kind} onClick={click} disabled={busy} aria-busy={busy}>{label}</button>
      <Problem error={error} />
    </span>
  );
}

export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section aria-labelledby={id ?? slug(title)}>
      <h2 id={id ?? slug(title)}>{title}</h2>
      {children}
    </section>
  );
}

const slug = (text: string) => `h-${text.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
