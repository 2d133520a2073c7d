// Sections a run shows only when the API carries them: its cost
// (pay-per-run) and its durable steps. Their exact shapes are the API's;
// these views show any object readably and pick out a total when there
// is one.
import { el, kv, jsonView, fmtDuration } from './dom.js';

const totalKeys = ['total_micro_usd', 'micro_usd', 'total_micro_dollars', 'micro_dollars', 'total'];

// costMicros is a run's total cost in micro-dollars, or null when the run
// carries none.
export function costMicros(run) {
  const c = run.cost;
  if (c === null || c === undefined) return null;
  if (typeof c === 'number') return c;
  for (const k of totalKeys) if (typeof c[k] === 'number') return c[k];
  return null;
}

// fmtMicros formats micro-dollars as dollars.
export const fmtMicros = (m) => (m === null ? '' : '$' + (m / 1e6).toFixed(m < 10000 ? 6 : 4));

// costSection shows the run's cost, or null when it has none.
export function costSection(run) {
  if (run.cost === null || run.cost === undefined) return null;
  const total = costMicros(run);
  const rows = typeof run.cost === 'object' ? Object.entries(run.cost)
    .filter(([k]) => !totalKeys.includes(k))
    .map(([k, v]) => [k, typeof v === 'object' ? jsonView(v, k) : String(v)]) : [];
  return el('section', { className: 'card', id: 'cost' },
    el('h2', { text: 'Cost' }),
    total === null ? null : el('p', { className: 'big', text: fmtMicros(total) }),
    kv(rows));
}

// stepsSection lists the run's durable steps, or null when it has none.
export function stepsSection(run) {
  const steps = Array.isArray(run.steps) ? run.steps : null;
  if (!steps || steps.length === 0) return null;
  const tbody = el('tbody');
  for (const s of steps) {
    tbody.append(el('tr', null,
      el('td', { text: s.name ?? '' }),
      el('td', { text: s.status ?? s.state ?? '' }),
      el('td', { text: s.attempt ?? '' }),
      el('td', { text: s.duration_ms === undefined ? '' : fmtDuration(s.duration_ms) }),
      el('td', null, jsonView(s.result ?? s.output ?? s.error ?? null, 'details'))));
  }
  return el('section', { className: 'card', id: 'steps' },
    el('h2', { text: 'Steps' }),
    el('table', null,
      el('thead', null, el('tr', null, ['Step', 'Status', 'Attempt', 'Duration', 'Result'].map((h) => el('th', { text: h })))),
      tbody));
}
