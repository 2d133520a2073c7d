// Sections a run shows only when the API carries them: its cost
// (pay-per-run) and its durable steps.
import { el, kv, jsonView, fmtDuration } from './dom.js';

// costNanos is a run's total cost in nano-dollars (the API's
// cost.total_nano_usd, an exact integer), or null when the run carries
// none.
export function costNanos(run) {
  const c = run.cost;
  if (c === null || c === undefined || typeof c.total_nano_usd !== 'number') return null;
  return c.total_nano_usd;
}

// fmtNanos formats nano-dollars as dollars, exactly, as the CLI does:
// 8805 → "$0.000008805", 1.5e9 → "$1.50".
export function fmtNanos(n) {
  if (n === null) return '';
  const sign = n < 0 ? '-' : '';
  const a = Math.abs(n);
  const frac = String(a % 1e9).padStart(9, '0').replace(/0+$/, '').padEnd(2, '0');
  return sign + '$' + Math.floor(a / 1e9) + '.' + frac;
}

// costSection shows the run's cost: the total, its components, each
// attempt's priced items and the price table's version; null when the run
// has none.
export function costSection(run) {
  const total = costNanos(run);
  if (total === null) return null;
  const c = run.cost;
  const comps = Object.entries(c.components ?? {}).map(([k, v]) => [k.replaceAll('_', ' '), fmtNanos(v)]);
  const rows = [];
  for (const a of c.attempts ?? []) {
    for (const it of a.items ?? []) {
      rows.push(el('tr', null,
        el('td', { text: a.attempt }), el('td', { text: it.component }), el('td', { text: it.price }),
        el('td', { text: (it.quantity ?? '') + ' ' + (it.unit ?? '') }), el('td', { text: fmtNanos(it.nano_usd) })));
    }
  }
  return el('section', { className: 'card', id: 'cost' },
    el('h2', { text: 'Cost' }),
    el('p', { className: 'big', text: fmtNanos(total) }),
    kv(comps.concat([['prices', String(c.price_version ?? '')]],
      (c.unpriced ?? []).length ? [['no price for', c.unpriced.join(' ')]] : [])),
    rows.length === 0 ? null : el('table', null,
      el('thead', null, el('tr', null, ['Attempt', 'Component', 'Price', 'Quantity', 'Cost'].map((h) => el('th', { text: h })))),
      el('tbody', null, rows)));
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
