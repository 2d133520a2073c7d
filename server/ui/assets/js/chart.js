// Small SVG charts drawn from the runs on the page: runs per state over
// time, and the duration (or cost) of each run.
import { el, svg, fmtDuration, fmtTime, runDuration } from './dom.js';

export const states = ['submitted', 'working', 'input-required', 'auth-required', 'completed', 'failed', 'cancelled', 'rejected'];

const W = 480;
const H = 150;
const PAD = 24; // bottom and top
const LEFT = 56; // room for the top value

// stateChart stacks the runs created in each of n time buckets by state.
export function stateChart(runs, n = 12) {
  const box = chartBox('Runs per state over time');
  if (runs.length === 0) return box.done();
  const t0 = Math.min(...runs.map((r) => r.created_ms));
  const t1 = Math.max(...runs.map((r) => r.created_ms)) + 1;
  const step = Math.max(1, (t1 - t0) / n);
  const buckets = Array.from({ length: n }, () => ({}));
  for (const r of runs) {
    const b = buckets[Math.min(n - 1, Math.floor((r.created_ms - t0) / step))];
    b[r.state] = (b[r.state] || 0) + 1;
  }
  const top = Math.max(...buckets.map((b) => Object.values(b).reduce((a, c) => a + c, 0)));
  const bw = (W - LEFT) / n;
  buckets.forEach((b, i) => {
    let y = H - PAD;
    for (const s of states) {
      if (!b[s]) continue;
      const h = (b[s] / top) * (H - 2 * PAD);
      y -= h;
      box.g.append(svg('rect', { x: LEFT + i * bw + 1, y, width: bw - 2, height: h, class: 'bar state-' + s,
        title: `${b[s]} ${s}, created ${fmtTime(t0 + i * step)} – ${fmtTime(t0 + (i + 1) * step)}` }));
    }
  });
  box.axis(top, fmtTime(t0), fmtTime(t1));
  box.legend(states.filter((s) => buckets.some((b) => b[s])));
  return box.done();
}

// valueChart draws one bar per run: its duration, or its cost when
// cost(run) gives a number for every run.
export function valueChart(runs, title, value, format) {
  const box = chartBox(title);
  const shown = runs.slice(0, 50).reverse(); // oldest left
  if (shown.length === 0) return box.done();
  const top = Math.max(1, ...shown.map(value));
  const bw = (W - LEFT) / shown.length;
  shown.forEach((r, i) => {
    const h = (value(r) / top) * (H - 2 * PAD);
    box.g.append(svg('rect', { x: LEFT + i * bw + 1, y: H - PAD - h, width: Math.max(1, bw - 2), height: h,
      class: 'bar state-' + r.state, title: `${r.id} (${r.agent.name}): ${format(value(r))}, ${r.state}` }));
  });
  box.axis(format(top), 'older', 'newer');
  return box.done();
}

export const durationChart = (runs) => valueChart(runs, 'Duration per run', (r) => runDuration(r), fmtDuration);

function chartBox(title) {
  const g = svg('g');
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', preserveAspectRatio: 'xMidYMid meet' },
    svg('title', { text: title }), g);
  const fig = el('figure', { className: 'chart-box' }, el('figcaption', { text: title }), root);
  return {
    g,
    axis(top, left, right) {
      g.append(svg('line', { x1: LEFT, x2: W, y1: H - PAD, y2: H - PAD, class: 'axis' }),
        svg('text', { x: LEFT - 4, y: PAD, 'text-anchor': 'end', class: 'tick', text: top }),
        svg('text', { x: LEFT, y: H - 6, class: 'tick', text: left }),
        svg('text', { x: W, y: H - 6, 'text-anchor': 'end', class: 'tick', text: right }));
    },
    legend(list) {
      fig.append(el('p', { className: 'legend' }, list.map((s) => el('span', { className: 'swatch state-' + s, text: s }))));
    },
    done() {
      if (!g.firstChild) fig.append(el('p', { className: 'muted', text: 'No runs to chart.' }));
      return fig;
    },
  };
}
