/** The board's shell: who it is, the navigation, the live connection, the theme, and the page shown. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { get, setCsrf, type Session, type Status } from './api';
import { TaskView } from './task';
import { Changes, Feed, Problem, type FeedEntry } from './ui';
import { AgentsView, DeadLettersView, OverviewView, SchedulesView, SpendView, TasksView, type TaskFilters } from './views';
import type { Refusal } from './api';

interface Route { page: string; id?: string; params: URLSearchParams }
const routeOf = (hash: string): Route => {
  const [path = '', query = ''] = hash.replace(/^#\/?/, '').split('?');
  const [page = 'overview', id] = path.split('/');
  return { page: page || 'overview', id, params: new URLSearchParams(query) };
};

const pages: Array<[string, string]> = [['overview', 'Overview'], ['agents', 'Agents'], ['tasks', 'Tasks'], ['dead-letters', 'Dead letters'], ['schedules', 'Schedules'], ['spend', 'Spend']];

function useRoute(): Route {
  const [route, setRoute] = useState(() => routeOf(location.hash));
  useEffect(() => {
    const moved = () => setRoute(routeOf(location.hash));
    addEventListener('hashchange', moved);
    // The hash may have changed between the first render and this effect.
    moved();
    return () => removeEventListener('hashchange', moved);
  }, []);
  return route;
}

/** How many moves the overview's live feed keeps. */
const FEED_LENGTH = 30;

/**
 * Counts the server's change events (at most one render in 250 ms), keeps the feed of what moved, and
 * whether push is up.
 */
function useLive(): { changes: number; feed: FeedEntry[]; push: boolean | undefined; connected: boolean } {
  const [changes, setChanges] = useState(0);
  const [feed, setFeed] = useState<FeedEntry[]>([]);
  const [push, setPush] = useState<boolean>();
  const [connected, setConnected] = useState(false);
  useEffect(() => {
    const source = new EventSource('/api/events');
    let pending: number | undefined;
    source.addEventListener('open', () => setConnected(true));
    source.addEventListener('error', () => setConnected(false));
    source.addEventListener('push', (e) => setPush(JSON.parse((e as MessageEvent).data).up));
    source.addEventListener('change', (e) => {
      const { tasks } = JSON.parse((e as MessageEvent).data) as { tasks: Array<{ id: string; status: Status }> };
      if (tasks.length) {
        const at = new Date().toISOString();
        // A change heard on two topics (the sender's and the holder's) is one move.
        setFeed((old) => [...tasks.filter((t) => old.find((o) => o.id === t.id)?.status !== t.status).map((t) => ({ at, ...t })).reverse(), ...old].slice(0, FEED_LENGTH));
      }
      if (pending === undefined) pending = window.setTimeout(() => { pending = undefined; setChanges((n) => n + 1); }, 250);
    });
    return () => source.close();
  }, []);
  return { changes, feed, push, connected };
}

function useTheme(): [string, () => void] {
  const [theme, setTheme] = useState(() => localStorage.getItem('baton-theme') ?? (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'));
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    localStorage.setItem('baton-theme', theme);
  }, [theme]);
  return [theme, () => setTheme(theme === 'dark' ? 'light' : 'dark')];
}

function filtersOf(params: URLSearchParams): TaskFilters {
  const f = Object.fromEntries(params) as Record<string, string>;
  return { ...f, page: f.page ? Number(f.page) : 0 } as TaskFilters;
}
const hashOf = (filters: TaskFilters) =>
  `#/tasks?${new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== undefined && v !== '' && v !== 0).map(([k, v]) => [k, String(v)]))}`;

function App() {
  const [session, setSession] = useState<Session>();
  const [error, setError] = useState<Refusal>();
  const route = useRoute();
  const live = useLive();
  const [theme, toggleTheme] = useTheme();
  useEffect(() => {
    get<Session>('session').then((s) => { setCsrf(s.csrf); setSession(s); }, setError);
  }, []);
  useEffect(() => {
    const name = pages.find(([p]) => p === route.page)?.[1] ?? (route.page === 'task' ? `Task ${route.id?.slice(0, 8)}` : 'Board');
    document.title = `${name} · Baton board`;
  }, [route.page, route.id]);

  const who = !session ? '…' : session.kind === 'operator' ? 'operator (sees everything)' : `agent ${session.id}`;
  const liveText = !live.connected ? 'disconnected' : live.push === false ? 'live (polling: push is down)' : 'live';
  return (
    <Changes.Provider value={live.changes}><Feed.Provider value={live.feed}>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <h1><a href="#/">Baton</a></h1>
        <nav aria-label="board">
          <ul>
            {pages.map(([page, label]) => (
              <li key={page}><a href={`#/${page}`} aria-current={route.page === page ? 'page' : undefined}>{label}</a></li>
            ))}
          </ul>
        </nav>
        <div class="whoami">
          <span>as <strong>{who}</strong></span>
          <span class={`live ${live.connected ? 'on' : 'off'}`} role="status">{liveText}</span>
          <button type="button" onClick={toggleTheme} aria-label={`switch to ${theme === 'dark' ? 'light' : 'dark'} theme`}>{theme === 'dark' ? '☀' : '☾'}</button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Problem error={error} />
        {session && <Page route={route} session={session} />}
      </main>
    </Feed.Provider></Changes.Provider>
  );
}

function Page({ route, session }: { route: Route; session: Session }) {
  switch (route.page) {
    case 'agents': return <AgentsView />;
    case 'tasks': return <TasksView key={route.params.toString()} filters={filtersOf(route.params)} go={(f) => { location.hash = hashOf(f); }} />;
    case 'task': return route.id ? <TaskView id={route.id} session={session} /> : <p>No task named.</p>;
    case 'dead-letters': return <DeadLettersView session={session} />;
    case 'schedules': return <SchedulesView />;
    case 'spend': return <SpendView />;
    default: return <OverviewView />;
  }
}

const root = document.getElementById('app')!;
root.textContent = '';
render(<App />, root);
