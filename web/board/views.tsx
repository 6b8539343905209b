/** The board's pages: overview, agents, tasks, one task, dead letters, schedules. */
import { useContext, useState } from 'preact/hooks';
import { act, get, statuses, type AgentRow, type DeadLetterRow, type Overview, type ScheduleRow, type Session, type SpendRowView, type Status, type TaskPage } from './api';
import { rhythmOf, usd } from '../../src/text/words';
import { ActionButton, Badge, Feed, Loading, Problem, Recipient, Section, TaskLink, When, statusLabel, useLoad } from './ui';

export function OverviewView() {
  const { data, error } = useLoad(() => get<Overview>('overview'), []);
  if (!data) return <><Problem error={error} />{!error && <Loading what="the overview" />}</>;
  const open = statuses.slice(0, 4).reduce((n, s) => n + data.byStatus[s], 0);
  const peak = Math.max(1, ...data.lastHour.map((m) => m.completed + m.failed + m.withdrawn));
  const done = data.lastHour.reduce((n, m) => n + m.completed, 0);
  const failed = data.lastHour.reduce((n, m) => n + m.failed, 0);
  return (
    <>
      <Problem error={error} />
      <div class="cards">
        <a class="card" href="#/agents"><span class="big">{data.agents.online}</span> of {data.agents.total} agents online</a>
        <a class="card" href="#/tasks"><span class="big">{open}</span> open tasks</a>
        <div class="card"><span class="big">{done}</span> completed in the last hour</div>
        <a class="card" href="#/dead-letters"><span class="big">{failed}</span> failed in the last hour</a>
      </div>
      <LiveFeed />
      <Section title="Tasks by status">
        <p class="legend">Open, all of them</p>
        <StatusCounts data={data} of={statuses.slice(0, 4)} />
        <p class="legend">{finishedWhen(data.finishedSince)}</p>
        <StatusCounts data={data} of={statuses.slice(4)} />
      </Section>
      <Section title="The last hour">
        <svg class="bars" viewBox="0 0 600 120" role="img" aria-label={`Per minute over the last hour: ${done} completed, ${failed} failed`}>
          {data.lastHour.map((m) => {
            const x = Math.max(0, 59 - Math.floor((Date.now() - Date.parse(m.minute)) / 60_000)) * 10;
            const hDone = (m.completed / peak) * 110;
            const hFail = ((m.failed + m.withdrawn) / peak) * 110;
            return (
              <g key={m.minute}>
                <title>{`${new Date(m.minute).toLocaleTimeString()}: ${m.completed} completed, ${m.failed} failed, ${m.withdrawn} cancelled or rejected`}</title>
                <rect class="bar-done" x={x} y={118 - hDone} width="8" height={hDone} />
                <rect class="bar-fail" x={x} y={118 - hDone - hFail} width="8" height={hFail} />
              </g>
            );
          })}
          <line x1="0" y1="118.5" x2="600" y2="118.5" class="axis" />
        </svg>
        <div class="bars-axis" aria-hidden="true"><span>60 min ago</span><span>30 min ago</span><span>now</span></div>
        <p class="legend"><span class="key bar-done" aria-hidden="true" /> completed <span class="key bar-fail" aria-hidden="true" /> failed, cancelled or rejected</p>
      </Section>
    </>
  );
}

/** What moved since this page opened, newest first: hand-offs, claims, questions, completions, failures. */
function LiveFeed() {
  const feed = useContext(Feed);
  return (
    <Section title="Live">
      {feed.length === 0 ? <p class="muted">Nothing has moved since this page opened; hand-offs, claims and results appear here as they happen.</p> : (
        <ol class="feed" aria-live="polite">
          {feed.map((e) => <li key={`${e.id}-${e.status}-${e.at}`} data-feed-task={e.id}><When at={e.at} /> <Badge status={e.status} /> <TaskLink id={e.id} /></li>)}
        </ol>
      )}
    </Section>
  );
}

/** How far back the finished tasks are counted, as the database says it (task_counts' since). */
const finishedWhen = (since: string | null) => (since ? `Finished in the last ${Math.round((Date.now() - Date.parse(since)) / 3_600_000)} hours` : 'Finished lately');

function StatusCounts({ data, of }: { data: Overview; of: Status[] }) {
  return (
    <ul class="status-counts">
      {of.map((s) => (
        <li key={s}><a href={`#/tasks?status=${s}`}><Badge status={s} /> <span class="count" data-status={s}>{data.byStatus[s]}</span></a></li>
      ))}
    </ul>
  );
}

const rhythm = (agent: { poll_interval: string | null }) => { const every = rhythmOf(agent); return every ? `wakes every ${every}` : 'rhythm not said'; };

export function AgentsView() {
  const { data, error } = useLoad(() => get<AgentRow[]>('agents'), []);
  return (
    <Section title="Agents">
      <Problem error={error} />
      {!data ? !error && <Loading what="agents" /> : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="agents (scrolls)">
          <table>
            <thead><tr><th scope="col">Agent</th><th scope="col">State</th><th scope="col">Capabilities</th><th scope="col">Holds now</th><th scope="col">Last heard</th></tr></thead>
            <tbody>
              {data.map((a) => (
                <tr key={a.id} data-agent={a.id}>
                  <td><strong>{a.id}</strong>{a.display_name && a.display_name !== a.id && <div class="muted">{a.display_name}</div>}
                    {a.status_message && <div class="muted">{a.status_message}</div>}</td>
                  <td><span class={a.is_online ? 'online' : 'offline'}>{a.is_online ? 'online' : 'offline'}</span><div class="muted">{rhythm(a)}</div></td>
                  <td>{a.capabilities.map((c) => <span class="chip" key={c}>{c}</span>)}</td>
                  <td>{a.holds.length === 0 ? <span class="muted">nothing</span> : (
                    <ul class="plain">{a.holds.map((t) => <li key={t.id}><TaskLink id={t.id} title={t.title} /> <Badge status={t.status} /></li>)}</ul>
                  )}<div class="muted">{a.holds.length} of {a.max_concurrent}</div></td>
                  <td><When at={a.last_heartbeat} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Section>
  );
}

type Sort = 'created_at' | 'updated_at' | 'priority' | 'status' | 'title';
export interface TaskFilters { status?: string; agent?: string; capability?: string; q?: string; sort?: Sort; dir?: 'asc' | 'desc'; page?: number }

export function TasksView({ filters, go }: { filters: TaskFilters; go(next: TaskFilters): void }) {
  const params = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== undefined && v !== '').map(([k, v]) => [k, String(v)]));
  const { data, error } = useLoad(() => get<TaskPage>(`tasks?${params}`), [params.toString()]);
  const [draft, setDraft] = useState(filters);
  const sort = filters.sort ?? 'created_at';
  const dir = filters.dir ?? 'desc';
  const header = (key: Sort, label: string) => (
    <th scope="col" aria-sort={sort === key ? (dir === 'asc' ? 'ascending' : 'descending') : 'none'}>
      <button type="button" class="sort" onClick={() => go({ ...filters, sort: key, dir: sort === key && dir === 'desc' ? 'asc' : 'desc', page: 0 })}>
        {label}{sort === key ? (dir === 'asc' ? ' ▲' : ' ▼') : ''}
      </button>
    </th>
  );
  const page = filters.page ?? 0;
  return (
    <Section title="Tasks">
      <form class="filters" onSubmit={(e) => { e.preventDefault(); go({ ...draft, page: 0 }); }}>
        <label>Status
          <select value={draft.status ?? ''} onChange={(e) => setDraft({ ...draft, status: (e.target as HTMLSelectElement).value || undefined })}>
            <option value="">any</option>
            {statuses.map((s) => <option key={s} value={s}>{statusLabel(s)}</option>)}
          </select>
        </label>
        <label>Agent<input value={draft.agent ?? ''} onInput={(e) => setDraft({ ...draft, agent: (e.target as HTMLInputElement).value })} placeholder="sent, addressed or held" /></label>
        <label>Capability<input value={draft.capability ?? ''} onInput={(e) => setDraft({ ...draft, capability: (e.target as HTMLInputElement).value })} /></label>
        <label>Title contains<input type="search" value={draft.q ?? ''} onInput={(e) => setDraft({ ...draft, q: (e.target as HTMLInputElement).value })} /></label>
        <button type="submit" class="primary">Filter</button>
      </form>
      <Problem error={error} />
      {!data ? !error && <Loading what="tasks" /> : (
        <>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="tasks (scrolls)">
            <table class="tasks">
              <thead><tr>{header('title', 'Task')}{header('status', 'Status')}{header('priority', 'Priority')}<th scope="col">From → to</th><th scope="col">Held by</th>{header('created_at', 'Created')}{header('updated_at', 'Changed')}</tr></thead>
              <tbody>
                {data.rows.map((t) => (
                  <tr key={t.id} data-task={t.id}>
                    <td><TaskLink id={t.id} title={t.title} /></td>
                    <td><Badge status={t.status} />{t.progress_percent !== null && t.status === 'in_progress' && <span class="muted"> {t.progress_percent}%</span>}
                      {t.status === 'pending' && t.waiting_on > 0 && <span class="waiting"> waiting on {t.waiting_on}</span>}</td>
                    <td>{t.priority}</td>
                    <td>{t.from_agent} → <Recipient task={t} /></td>
                    <td>{t.claimed_by ?? <span class="muted">—</span>}</td>
                    <td><When at={t.created_at} /></td>
                    <td><When at={t.updated_at} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {data.rows.length === 0 && <p class="muted">No tasks match.</p>}
          <nav class="pager" aria-label="pages">
            <button type="button" disabled={page === 0} onClick={() => go({ ...filters, page: page - 1 })}>Newer page</button>
            <span>Page {page + 1} of {data.exact ? '' : 'about '}{Math.max(1, Math.ceil(data.total / data.size))} ({data.exact ? '' : 'about '}{data.total} tasks)</span>
            <button type="button" disabled={data.rows.length < data.size || (data.exact && (page + 1) * data.size >= data.total)} onClick={() => go({ ...filters, page: page + 1 })}>Older page</button>
          </nav>
        </>
      )}
    </Section>
  );
}

export function DeadLettersView({ session }: { session: Session }) {
  const { data, error, reload } = useLoad(() => get<DeadLetterRow[]>('dead-letters'), []);
  return (
    <Section title="Dead letters">
      <p class="muted">Tasks that failed for good. Their sender {session.kind === 'operator' ? 'or you, the operator,' : ''} may retry one: a new task with the same work.</p>
      <Problem error={error} />
      {!data ? !error && <Loading what="dead letters" /> : data.length === 0 ? <p class="muted">None.</p> : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="dead letters (scrolls)">
          <table>
            <thead><tr><th scope="col">Task</th><th scope="col">Why</th><th scope="col">Sender</th><th scope="col">Last holder</th><th scope="col">Failed</th><th scope="col">Retry</th></tr></thead>
            <tbody>
              {data.map((d) => (
                <tr key={d.id} data-task={d.id}>
                  <td><TaskLink id={d.id} title={d.title} /><div class="muted">{d.attempts} {d.attempts === 1 ? 'attempt' : 'attempts'}</div></td>
                  <td>{d.reason ?? <span class="muted">—</span>}</td>
                  <td>{d.from_agent}</td>
                  <td>{d.last_holder ?? '—'}</td>
                  <td><When at={d.failed_at} /></td>
                  <td>{d.retried_as ? <>retried as <TaskLink id={d.retried_as} /></>
                    : <ActionButton label="Retry" kind="primary" run={() => act({ action: 'retry', task: d.id })} done={reload} />}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Section>
  );
}

export function SchedulesView() {
  const { data, error, reload } = useLoad(() => get<ScheduleRow[]>('schedules'), []);
  return (
    <Section title="Schedules">
      <Problem error={error} />
      {!data ? !error && <Loading what="schedules" /> : data.length === 0 ? <p class="muted">No recurring hand-offs (baton schedule add makes one).</p> : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="schedules (scrolls)">
          <table>
            <thead><tr><th scope="col">Name</th><th scope="col">When (UTC)</th><th scope="col">Task</th><th scope="col">Next</th><th scope="col">Last</th><th scope="col">Actions</th></tr></thead>
            <tbody>
              {data.map((s) => (
                <tr key={s.id} data-schedule={s.name}>
                  <td><strong>{s.name}</strong>{!s.enabled && <span class="chip">paused</span>}</td>
                  <td><code>{s.schedule}</code></td>
                  <td>{s.template.title} <span class="muted">{s.from_agent} → </span><Recipient task={s} /></td>
                  <td>{s.enabled ? <When at={s.next_run_at} /> : '—'}</td>
                  <td><When at={s.last_run_at} />{s.last_error && <div class="problem-inline">{s.last_error}</div>}</td>
                  <td>
                    <ActionButton label={s.enabled ? 'Pause' : 'Resume'} run={() => act({ action: s.enabled ? 'pause' : 'resume', schedule: s.name })} done={reload} />
                    <ActionButton label="Remove" kind="danger" run={async () => { if (confirm(`Remove the schedule ${s.name}? The tasks it made stay.`)) await act({ action: 'remove', schedule: s.name }); }} done={reload} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Section>
  );
}

/** Sums of the rows by one key, largest first by tokens. */
function totals(rows: SpendRowView[], key: (r: SpendRowView) => string) {
  const by = new Map<string, { tokens: number; cost: number | null; runs: number }>();
  for (const r of rows) {
    const had = by.get(key(r)) ?? { tokens: 0, cost: null, runs: 0 };
    const cost = r.cost_usd === null ? had.cost : (had.cost ?? 0) + r.cost_usd;
    by.set(key(r), { tokens: had.tokens + r.input_tokens + r.output_tokens + r.cached_tokens, cost, runs: had.runs + r.runs });
  }
  return [...by].sort((a, b) => b[1].tokens - a[1].tokens);
}

const tokens = (n: number) => n.toLocaleString('en');
const money = (n: number | null) => (n === null ? '—' : usd(n));

/** What runs spent over the last two weeks, by agent and by model, and day by day. */
export function SpendView() {
  const { data, error } = useLoad(() => get<SpendRowView[]>('spend'), []);
  const summary = (title: string, label: string, rows: ReturnType<typeof totals>, attr: string) => (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={`${title} (scrolls)`}>
      <table>
        <caption>{title}</caption>
        <thead><tr><th scope="col">{label}</th><th scope="col">Runs</th><th scope="col">Tokens</th><th scope="col">Cost</th></tr></thead>
        <tbody>{rows.map(([k, t]) => <tr key={k} {...{ [attr]: k }}><td>{k}</td><td>{t.runs}</td><td>{tokens(t.tokens)}</td><td>{money(t.cost)}</td></tr>)}</tbody>
      </table>
    </div>
  );
  return (
    <Section title="Spend, the last 14 days">
      <Problem error={error} />
      {!data ? !error && <Loading what="spend" /> : data.length === 0 ? <p class="muted">No run reported what it spent in the last 14 days.</p> : (
        <>
          {summary('By agent', 'Agent', totals(data, (r) => r.agent_id), 'data-spend-agent')}
          {summary('By model', 'Model', totals(data, (r) => r.model), 'data-spend-model')}
          <div class="table-wrap" tabIndex={0} role="region" aria-label="day by day (scrolls)">
            <table>
              <caption>Day by day (UTC)</caption>
              <thead><tr><th scope="col">Day</th><th scope="col">Agent</th><th scope="col">Model</th><th scope="col">Runs</th><th scope="col">Input</th><th scope="col">Output</th><th scope="col">Cached</th><th scope="col">Cost</th></tr></thead>
              <tbody>
                {[...data].reverse().map((r) => (
                  <tr key={`${r.day}-${r.agent_id}-${r.model}`}>
                    <td>{r.day}</td><td>{r.agent_id}</td><td>{r.model}</td><td>{r.runs}</td><td>{tokens(r.input_tokens)}</td>
                    <td>{tokens(r.output_tokens)}</td><td>{tokens(r.cached_tokens)}</td><td>{money(r.cost_usd)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </Section>
  );
}

export const isStatus = (s: string | undefined): s is Status => statuses.includes(s as Status);
