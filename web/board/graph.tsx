/**
 * A chain drawn as a graph: each task a box (title, status, who took it), an arrow from the task it was
 * handed off within (parent → child, follow-ups and fan-out alike) and a dashed one from each task it
 * waited for (a join). dagre lays it out; the page draws SVG.
 */
import dagre from '@dagrejs/dagre';
import { useMemo } from 'preact/hooks';
import type { ChainNode } from './api';
import { short, statusLabel } from './ui';

const W = 220;
const H = 50;
const clip = (text: string, n: number) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

export function LineageGraph({ nodes, current }: { nodes: ChainNode[]; current: string }) {
  const layout = useMemo(() => {
    const g = new dagre.graphlib.Graph({ multigraph: true });
    g.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 48, marginx: 8, marginy: 8 });
    g.setDefaultEdgeLabel(() => ({}));
    const ids = new Set(nodes.map((n) => n.id));
    for (const n of nodes) g.setNode(n.id, { width: W, height: H });
    const edges: Array<{ from: string; to: string; join: boolean }> = [];
    for (const n of nodes) {
      if (n.parent_task_id && ids.has(n.parent_task_id)) edges.push({ from: n.parent_task_id, to: n.id, join: false });
      for (const d of n.depends_on) if (ids.has(d)) edges.push({ from: d, to: n.id, join: true });
    }
    for (const e of edges) g.setEdge(e.from, e.to, {}, `${e.from}>${e.to}`);
    dagre.layout(g);
    const graph = g.graph();
    return {
      width: Math.max(W, graph.width ?? W), height: Math.max(H, graph.height ?? H),
      boxes: nodes.map((n) => ({ node: n, x: g.node(n.id).x - W / 2, y: g.node(n.id).y - H / 2 })),
      lines: edges.map((e) => ({ ...e, points: g.edge(e.from, e.to, `${e.from}>${e.to}`).points ?? [] })),
    };
  }, [nodes]);

  return (
    <div class="graph-wrap" tabIndex={0} role="region" aria-label="lineage graph (scrolls)">
      <svg class="graph" width={layout.width} height={layout.height} viewBox={`0 0 ${layout.width} ${layout.height}`}
        role="group" aria-label={`The chain: ${nodes.length} tasks`}>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" />
          </marker>
        </defs>
        {layout.lines.map((l) => (
          <polyline key={`${l.from}>${l.to}`} class={l.join ? 'edge join' : 'edge'} marker-end="url(#arrow)"
            points={l.points.map((p: { x: number; y: number }) => `${p.x},${p.y}`).join(' ')} data-from={l.from} data-to={l.to} />
        ))}
        {layout.boxes.map(({ node, x, y }) => {
          const meta = `${short(node.id)} · ${statusLabel(node.status)}${node.producer ? ` · ${node.producer}` : node.to_agent ? ` → ${node.to_agent}` : ''}`;
          const [shownTitle, shownMeta] = [clip(node.title, 27), clip(meta, 34)];
          // Its name begins with the words it shows (WCAG 2.5.3, so a voice user can say them), then what they cut.
          const cut = [shownTitle === node.title ? '' : node.title, shownMeta === meta ? '' : meta].filter(Boolean).join('; ');
          return (
            <a key={node.id} href={`#/task/${node.id}`} class={`node s-${node.status}${node.id === current ? ' current' : ''}`} data-task={node.id}
              aria-label={`${shownTitle} ${shownMeta}${cut ? ` (${cut})` : ''}`}>
              <rect x={x} y={y} width={W} height={H} rx="6" />
              <text x={x + 8} y={y + 19} class="node-title">{shownTitle}</text>
              <text x={x + 8} y={y + 38} class="node-meta">{shownMeta}</text>
            </a>
          );
        })}
      </svg>
    </div>
  );
}
