// The runs list: filters, paging with the API's page tokens, live
// updates (the first page is re-read every half second while visible)
// and charts of the runs shown.
import { el, clear, fmtTime, fmtDuration, stateBadge, runDuration } from './dom.js';
import { states, stateChart, durationChart, valueChart } from './chart.js';
import { costNanos, fmtNanos } from './extras.js';

const pageSize = 25;
const pollMs = 500;
const since = { '': 'any time', 900000: 'last 15 min', 3600000: 'last hour', 86400000: 'last 24 h', 604800000: 'last 7 days' };

// listView renders the runs list into main and returns its disposer.
export function listView(main, api, params) {
  const f = {
    state: el('select', { name: 'state' }, el('option', { value: '', text: 'any state' }), states.map((s) => el('option', { value: s, text: s }))),
    agent: el('input', { name: 'agent', placeholder: 'agent', maxLength: 64 }),
    context: el('input', { name: 'context_id', placeholder: 'context ID', maxLength: 256 }),
    since: el('select', { name: 'since' }, Object.entries(since).map(([v, t]) => el('option', { value: v, text: t }))),
  };
  f.state.value = params.get('state') || '';
  f.agent.value = params.get('agent') || '';
  f.context.value = params.get('context_id') || '';
  f.since.value = params.get('since') || '';
  const tokens = ['']; // page tokens of the pages visited, the current last
  const tbody = el('tbody', { id: 'runs' });
  const head = el('tr');
  const charts = el('div', { className: 'charts' });
  const prev = el('button', { type: 'button', text: '← Newer', onclick: () => { tokens.pop(); load(); } });
  const next = el('button', { type: 'button', text: 'Older →' });
  const note = el('span', { className: 'muted' });
  const form = el('form', { className: 'filters', onsubmit: (e) => { e.preventDefault(); apply(); } },
    f.state, f.agent, f.context, f.since, el('button', { type: 'submit', text: 'Filter' }));
  for (const s of [f.state, f.since]) s.addEventListener('change', apply);
  clear(main, el('section', { className: 'card' }, el('h1', { text: 'Runs' }), form,
    el('table', { className: 'runs' }, el('thead', null, head), tbody),
    el('p', { className: 'pager' }, prev, next, note)), charts);

  let stopped = false;
  let busy = false;
  let nextToken = '';
  next.addEventListener('click', () => { tokens.push(nextToken); load(); });

  function apply() {
    const q = new URLSearchParams();
    for (const [k, v] of [['state', f.state.value], ['agent', f.agent.value.trim()], ['context_id', f.context.value.trim()], ['since', f.since.value]]) if (v) q.set(k, v);
    const hash = '#/' + (q.toString() ? '?' + q : '');
    if (location.hash !== hash) location.hash = hash; else { tokens.splice(1); load(); }
  }

  async function load() {
    if (busy || stopped) return;
    busy = true;
    try {
      const q = new URLSearchParams({ page_size: pageSize });
      if (f.state.value) q.set('state', f.state.value);
      if (f.agent.value.trim()) q.set('agent', f.agent.value.trim());
      if (f.context.value.trim()) q.set('context_id', f.context.value.trim());
      if (tokens.at(-1)) q.set('page_token', tokens.at(-1));
      const page = await api.get('/runs?' + q);
      if (!stopped) render(page);
    } catch (e) {
      note.textContent = 'Could not list runs: ' + e.message;
    } finally {
      busy = false;
    }
  }

  function render(page) {
    const cutoff = f.since.value ? Date.now() - Number(f.since.value) : 0;
    const runs = page.runs.filter((r) => r.created_ms >= cutoff);
    const withCost = runs.some((r) => costNanos(r) !== null);
    clear(head, ...['Run', 'Agent', 'State', 'Context', 'Created', 'Duration', 'Attempts']
      .concat(withCost ? ['Cost'] : []).map((h) => el('th', { text: h })));
    clear(tbody, ...runs.map((r) => row(r, withCost)));
    if (runs.length === 0) tbody.append(el('tr', null, el('td', { className: 'muted', text: 'No runs.' })));
    nextToken = page.next_page_token || '';
    const pastCutoff = page.runs.length > runs.length;
    next.disabled = !nextToken || pastCutoff;
    prev.disabled = tokens.length < 2;
    note.textContent = tokens.length === 1 ? 'live' : `page ${tokens.length}`;
    clear(charts, stateChart(runs), withCost
      ? valueChart(runs.filter((r) => costNanos(r) !== null), 'Cost per run', costNanos, fmtNanos)
      : durationChart(runs));
  }

  function row(r, withCost) {
    return el('tr', { dataset: { runId: r.id, state: r.state } },
      el('td', null, el('a', { href: '#/runs/' + r.id, className: 'mono', text: r.id })),
      el('td', { text: r.agent.name + (r.agent.version ? '@' + r.agent.version : '') }),
      el('td', null, stateBadge(r.state)),
      el('td', { text: r.context_id || '' }),
      el('td', { text: fmtTime(r.created_ms) }),
      el('td', { text: fmtDuration(runDuration(r)) }),
      el('td', { text: r.attempt }),
      withCost ? el('td', { text: fmtNanos(costNanos(r)) }) : null);
  }

  load();
  const timer = setInterval(() => { if (tokens.length === 1 && !document.hidden) load(); }, pollMs);
  return () => { stopped = true; clearInterval(timer); };
}
