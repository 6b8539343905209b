/** One task: what it is, what it produced, its history and thread, its chain, and what one may do to it. */
import { useState } from 'preact/hooks';
import { act, get, type BudgetView, type Session, type TaskDetail } from './api';
import { progressText, usd } from '../../src/text/words';
import { LineageGraph } from './graph';
import { ActionButton, Badge, JsonTree, Loading, Problem, Recipient, Section, TaskLink, When, short, statusLabel, useLoad } from './ui';

const openStatuses = ['pending', 'claimed', 'in_progress', 'input_required'];
const count = (n: number) => n.toLocaleString('en');
const dollars = (amount: number | null) => (amount === null ? '—' : usd(amount));

/** The nearest budget over the task's chain against what was spent, and whether the work left waits. */
function BudgetLine({ budget }: { budget: BudgetView }) {
  const [own] = budget.budgets;
  if (!own) return null;
  const spent = [
    own.tokens_limit !== null ? `${count(own.tokens_spent)} of ${count(own.tokens_limit)} tokens` : undefined,
    own.usd_limit !== null ? `${dollars(own.usd_spent)} of ${dollars(own.usd_limit)}` : undefined,
  ].filter(Boolean).join(' and ');
  const left = [budget.tokens_left !== null ? `${count(budget.tokens_left)} tokens` : undefined, budget.usd_left !== null ? dollars(budget.usd_left) : undefined].filter(Boolean).join(' and ');
  return (
    <p class={budget.spent ? 'problem-inline' : undefined} data-budget={budget.spent ? 'spent' : 'left'}>
      <strong>Budget</strong> (set on <TaskLink id={own.task_id} />, {own.on_spent === 'ask' ? 'asks its sender' : 'fails the rest'} when spent): {spent} spent;{' '}
      {!budget.spent ? `left: ${left}` : own.on_spent === 'ask' ? 'spent: the work left under it waits for its sender to raise it' : 'spent: the work left under it failed'}.
    </p>
  );
}
const size = (n: number | null) => (n === null ? '—' : n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`);

export function TaskView({ id, session }: { id: string; session: Session }) {
  const { data, error, reload } = useLoad(() => get<TaskDetail>(`tasks/${id}`), [id]);
  if (!data) return <><Problem error={error} />{!error && <Loading what={`task ${short(id)}`} />}</>;
  const { task } = data;
  const result = task.result as { summary?: string } | null;
  return (
    <article aria-labelledby="task-title">
      <p><a href="#/tasks">← all tasks</a></p>
      <h2 id="task-title">{task.title} <Badge status={task.status} /></h2>
      <Problem error={error} />
      <dl class="facts">
        <dt>Id</dt><dd><code>{task.id}</code></dd>
        <dt>From → to</dt><dd>{task.from_agent} → <Recipient task={task} /></dd>
        <dt>Held by</dt><dd>{task.claimed_by ?? '—'}</dd>
        <dt>Priority</dt><dd>{task.priority}</dd>
        <dt>Attempts</dt><dd>{task.attempts} of {task.max_attempts}</dd>
        <dt>Created</dt><dd><When at={task.created_at} /></dd>
        {task.status_reason && <><dt>Reason</dt><dd>{task.status_reason}</dd></>}
        {progressText(task) && <><dt>Progress</dt><dd>{progressText(task)}</dd></>}
        {task.retry_of && <><dt>Retry of</dt><dd><TaskLink id={task.retry_of} /></dd></>}
        {data.retries.length > 0 && <><dt>Retried as</dt><dd>{data.retries.map((r) => <span key={r.id}><TaskLink id={r.id} /> <Badge status={r.status} /> </span>)}</dd></>}
      </dl>
      {task.description && <p class="description">{task.description}</p>}
      <Actions detail={data} session={session} done={reload} />
      <Section title="Lineage" id="lineage">
        <LineageGraph nodes={data.chain} current={task.id} />
      </Section>
      <Section title="Result" id="result">
        {task.result === null ? <p class="muted">No result yet.</p> : <>{result?.summary && <p>{result.summary}</p>}<JsonTree value={task.result} /></>}
      </Section>
      <Section title="Artifacts" id="artifacts"><Artifacts detail={data} /></Section>
      <Section title="Spent" id="spent"><Spent detail={data} /></Section>
      <Section title="Payload" id="payload"><JsonTree value={task.payload} open={false} /></Section>
      <Section title="History" id="history">
        <ol class="timeline">
          {data.events.map((e) => (
            <li key={e.id} data-to={e.to_status}>
              <When at={e.at} /> <strong>{e.actor}</strong> {e.from_status ? <>moved it from {statusLabel(e.from_status)} to <Badge status={e.to_status} /></> : <>created it as <Badge status={e.to_status} /></>}
              {e.note && <div class="muted">{e.note}</div>}
            </li>
          ))}
        </ol>
      </Section>
      <Section title="Thread" id="thread">
        {data.messages.length === 0 ? <p class="muted">No messages on this task.</p> : (
          <ol class="thread">
            {data.messages.map((m) => (
              <li key={m.id} class={`msg k-${m.kind}`}>
                <div class="muted"><span class="chip">{m.kind}</span> {m.from_agent} → {m.to_agent ?? 'everyone'} · <When at={m.created_at} /></div>
                {typeof (m.body as { text?: unknown })?.text === 'string' ? <p>{(m.body as { text: string }).text}</p> : <JsonTree value={m.body} open={false} />}
              </li>
            ))}
          </ol>
        )}
      </Section>
    </article>
  );
}

function ArtifactJson({ taskId, name }: { taskId: string; name: string }) {
  const { data, error } = useLoad(() => fetch(`/api/tasks/${taskId}/artifacts/${encodeURIComponent(name)}`).then((r) => r.json()), [taskId, name]);
  return (
    <details class="artifact-json">
      <summary>{name} as a tree</summary>
      <Problem error={error} />
      {data !== undefined && <JsonTree value={data} />}
    </details>
  );
}

/**
 * Cancel, reassign and answer are the sender's; retry the sender's or the operator's. Only what the
 * database would let this board do is offered (it decides all the same).
 */
function Actions({ detail, session, done }: { detail: TaskDetail; session: Session; done(): void }) {
  const { task } = detail;
  const [answer, setAnswer] = useState('');
  const [to, setTo] = useState('');
  const sender = session.kind === 'agent' && session.id === task.from_agent;
  const open = sender && openStatuses.includes(task.status);
  const retry = task.status === 'failed' && (sender || session.kind === 'operator');
  if (!open && !retry) return null;
  return (
    <div class="actions" aria-label="actions">
      {task.status === 'input_required' && (
        <form class="inline" onSubmit={(e) => e.preventDefault()}>
          <label>Answer the question<textarea value={answer} onInput={(e) => setAnswer((e.target as HTMLTextAreaElement).value)} rows={2} /></label>
          <ActionButton label="Send answer" kind="primary" run={() => act({ action: 'answer', task: task.id, text: answer })} done={() => { setAnswer(''); done(); }} />
        </form>
      )}
      {open && task.status !== 'input_required' && (
        <form class="inline" onSubmit={(e) => e.preventDefault()}>
          <label>Reassign to<input value={to} onInput={(e) => setTo((e.target as HTMLInputElement).value)} placeholder="agent id" /></label>
          <ActionButton label="Reassign" run={() => act({ action: 'reassign', task: task.id, to })} done={done} />
        </form>
      )}
      {open && <ActionButton label="Cancel task" kind="danger" run={() => act({ action: 'cancel', task: task.id, reason: 'cancelled from the board' })} done={done} />}
      {retry && <ActionButton label="Retry" kind="primary" run={() => act({ action: 'retry', task: task.id })} done={done} />}
    </div>
  );
}

/** The task's artifacts: each a download (or its link), and JSON ones shown as trees. */
function Artifacts({ detail: data }: { detail: TaskDetail }) {
  const { task } = data;
  return (
    <>
    {data.artifacts.length === 0 ? <p class="muted">None attached.</p> : (
      <div class="table-wrap" tabIndex={0} role="region" aria-label="artifacts (scrolls)">
        <table>
          <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Size</th><th scope="col">SHA-256</th><th scope="col">By</th></tr></thead>
          <tbody>
            {data.artifacts.map((a) => (
              <tr key={a.name} data-artifact={a.name}>
                <td>{a.uri ? (/^https?:\/\//i.test(a.uri) ? <a href={a.uri} rel="noreferrer noopener">{a.name}</a> : <span title={a.uri}>{a.name} <span class="muted">({a.uri})</span></span>) : <a href={`/api/tasks/${task.id}/artifacts/${encodeURIComponent(a.name)}`} download={a.name}>{a.name}</a>}</td>
                <td>{a.media_type}</td>
                <td>{size(a.size_bytes)}</td>
                <td><code class="hash">{a.sha256 ?? '—'}</code></td>
                <td>{a.producer}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    )}
    {data.artifacts.filter((a) => !a.uri && a.media_type.includes('json')).map((a) => <ArtifactJson key={a.name} taskId={task.id} name={a.name} />)}
    </>
  );
}

/** What the task's runs spent, what its chain spent by model, and the budget over it. */
function Spent({ detail: data }: { detail: TaskDetail }) {
  return (
    <>
    {data.budget && <BudgetLine budget={data.budget} />}
    {data.usage.length === 0 ? <p class="muted">No run of this task has reported what it spent.</p> : (
      <div class="table-wrap" tabIndex={0} role="region" aria-label="what the task's runs spent (scrolls)">
        <table>
          <thead><tr><th scope="col">Attempt</th><th scope="col">Runtime</th><th scope="col">Model</th><th scope="col">Input</th><th scope="col">Output</th><th scope="col">Cached</th><th scope="col">Turns</th><th scope="col">Cost</th></tr></thead>
          <tbody>
            {data.usage.map((r) => (
              <tr key={`${r.attempt}-${r.model}`} data-usage={r.model}>
                <td>{r.attempt}</td><td>{r.runtime}</td><td>{r.model}</td><td>{count(r.input_tokens)}</td><td>{count(r.output_tokens)}</td>
                <td>{count(r.cached_tokens)}</td><td>{r.turns}</td><td>{dollars(r.cost_usd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    )}
    {data.chainUsage.length > 0 && (
      <div class="table-wrap" tabIndex={0} role="region" aria-label="what the chain spent (scrolls)">
        <table>
          <caption>This task and everything under it, by model</caption>
          <thead><tr><th scope="col">Model</th><th scope="col">Tasks</th><th scope="col">Input</th><th scope="col">Output</th><th scope="col">Cached</th><th scope="col">Cost</th></tr></thead>
          <tbody>
            {data.chainUsage.map((c) => (
              <tr key={c.model} data-chain-usage={c.model}>
                <td>{c.model}</td><td>{c.tasks}</td><td>{count(c.input_tokens)}</td><td>{count(c.output_tokens)}</td><td>{count(c.cached_tokens)}</td><td>{dollars(c.cost_usd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    )}
    </>
  );
}
