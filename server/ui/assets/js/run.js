// The run page: the run's state and details, the live event timeline,
// cancel with a confirmation, the interrupt form to resume, attempts,
// result or error, cost and steps when the run carries them, and its
// push configurations.
import { el, clear, kv, fmtTime, fmtDuration, jsonView, stateBadge, terminal, interrupted, runDuration } from './dom.js';
import { Timeline } from './timeline.js';
import { costSection, stepsSection } from './extras.js';
import { pushSection } from './push.js';

// runView renders run id into main and returns its disposer.
export function runView(main, api, id) {
  const timeline = new Timeline();
  const head = el('section', { className: 'card', id: 'run-head' });
  const headInfo = el('div');
  const cancel = cancelBox();
  head.append(headInfo, cancel.node);
  const ask = el('div');
  const details = el('div');
  const streamStatus = el('span', { className: 'stream-status', id: 'stream-status' });
  const pushes = pushSection(api, id);
  clear(main, head, ask, timeline.node, details, pushes.node);
  timeline.node.querySelector('h2').append(' ', streamStatus);

  let run = null;
  let stream = null;
  let streaming = false;
  let cursor = '';
  let stopped = false;
  let pending = 0;

  function show(r) {
    const before = run ? run.state : '';
    run = r;
    renderHead();
    clear(details, outcome(r), costSection(r), stepsSection(r), attempts(r),
      r.variables === undefined ? null : el('section', { className: 'card' }, el('h2', { text: 'Variables' }), jsonView(r.variables, 'variables')));
    if (r.state !== before) clear(ask, interrupted(r.state) ? resumeForm(r) : null);
    if (!terminal(r.state) && !interrupted(r.state) && !streaming) startStream();
  }

  async function refresh() {
    try {
      const r = await api.run(id);
      if (!stopped) show(r);
    } catch (e) {
      if (!run) clear(headInfo, el('h1', { text: 'Run ' + id }), el('p', { className: 'error', text: e.message }));
    }
  }

  // refreshSoon re-reads the run (attempts, usage) at most every 300 ms
  // while events arrive.
  function refreshSoon() {
    if (!pending) pending = setTimeout(() => { pending = 0; refresh(); }, 300);
  }

  // startStream follows the run's events after the last one shown; it
  // ends with the final run (terminal, or interrupted until a resume).
  function startStream() {
    if (stream) stream.close();
    streaming = true;
    stream = api.follow(id, cursor, {
      onEvent: (ev, c) => { cursor = c; timeline.add(ev, c); refreshSoon(); },
      onRun: (r) => { streaming = false; show(r); },
      onStatus: (s, err) => { if (s === 'error') streaming = false; streamStatus.textContent = s === 'error' ? 'stream error: ' + err.message : s; streamStatus.dataset.status = s; },
    });
  }

  function renderHead() {
    const r = run;
    clear(headInfo,
      el('h1', null, 'Run ', el('span', { className: 'mono', id: 'run-id', text: r.id }), ' ', stateBadge(r.state)),
      kv([
        ['Agent', r.agent.name + (r.agent.version ? '@' + r.agent.version : '') + ' (' + r.agent.runtime + ')'],
        ['Context', r.context_id],
        ['Labels', r.labels ? Object.entries(r.labels).map(([k, v]) => k + '=' + v).join(', ') : ''],
        ['Created', fmtTime(r.created_ms)],
        ['Updated', fmtTime(r.updated_ms)],
        ['Duration', fmtDuration(runDuration(r))],
        ['Attempt', r.attempt ? `${r.attempt} of at most ${r.policy.max_attempts || 3}` : 'not launched yet'],
        ['Queued', r.queue ? `position ${r.queue.position} for concurrency key ${r.queue.key}` : ''],
        ['Cancel', r.cancel_requested ? 'requested' : ''],
        ['Reason', r.reason],
      ]));
    cancel.update(r);
  }

  // cancelBox is built once per page and only updated by a refresh, so
  // a refresh (every 300 ms while events arrive) never closes a
  // confirmation in progress or drops the reason being typed.
  function cancelBox() {
    const reason = el('input', { id: 'cancel-reason', placeholder: 'reason (optional)', maxLength: 1024 });
    const err = el('span', { className: 'error' });
    const confirm = el('span', { className: 'confirm', hidden: true }, 'Cancel this run? ', reason,
      el('button', { type: 'button', id: 'confirm-cancel', className: 'danger', text: 'Confirm cancel', onclick: doCancel }),
      el('button', { type: 'button', text: 'Keep running', onclick: () => { confirm.hidden = true; open.hidden = false; } }));
    const open = el('button', { type: 'button', id: 'cancel', className: 'danger', text: 'Cancel run…',
      onclick: () => { confirm.hidden = false; open.hidden = true; reason.focus(); } });
    async function doCancel() {
      try {
        show(await api.cancel(id, reason.value));
      } catch (e) {
        err.textContent = 'Cancel failed: ' + e.message;
      }
    }
    const node = el('p', { className: 'actions', hidden: true }, open, confirm, err);
    function update(r) {
      node.hidden = terminal(r.state);
      open.disabled = !!r.cancel_requested;
      if (r.cancel_requested) { confirm.hidden = true; open.hidden = false; }
    }
    return { node, update };
  }

  function resumeForm(r) {
    const input = el('textarea', { id: 'resume-input', rows: 4, placeholder: '{"answer": 42}', spellcheck: false });
    const err = el('p', { className: 'error' });
    async function submit(e) {
      e.preventDefault();
      let value;
      try { value = JSON.parse(input.value); } catch { value = input.value; }
      try {
        show(await api.resume(id, value));
      } catch (x) {
        err.textContent = 'Resume failed: ' + x.message + (x.field ? ` (${x.field})` : '');
      }
    }
    const i = r.interrupt || {};
    return el('section', { className: 'card interrupt', id: 'interrupt' },
      el('h2', { text: r.state === 'auth-required' ? 'Authorization required' : 'Input required' }),
      el('p', { className: 'prompt', id: 'prompt', text: i.prompt || '(no prompt)' }),
      el('form', { id: 'resume-form', onsubmit: submit },
        el('label', { htmlFor: 'resume-input', text: 'Input — sent as JSON when it parses as JSON, else as a string' }),
        input, el('button', { type: 'submit', id: 'resume', text: 'Resume' })),
      err);
  }

  startStream();
  refresh();
  const poll = setInterval(() => { if (run && !terminal(run.state) && !document.hidden) refresh(); }, 2000);
  return () => { stopped = true; clearInterval(poll); clearTimeout(pending); if (stream) stream.close(); pushes.close(); };
}

// outcome shows the result or the error of a run that has one.
function outcome(r) {
  if (r.result !== undefined) {
    return el('section', { className: 'card', id: 'result' }, el('h2', { text: 'Result' }), jsonView(r.result, summaryOf(r.result)));
  }
  if (r.error) {
    return el('section', { className: 'card', id: 'error' }, el('h2', { text: 'Error' }),
      kv([['Type', r.error.type], ['Message', r.error.message], ['Retryable', r.error.retryable ? 'yes' : '']]));
  }
  return null;
}

function summaryOf(v) {
  const s = JSON.stringify(v);
  return s.length > 100 ? s.slice(0, 97) + '…' : s;
}

// attempts is the table of the run's attempts.
function attempts(r) {
  if (!r.attempts || r.attempts.length === 0) return null;
  const rows = r.attempts.map((a) => el('tr', { dataset: { attempt: a.number } },
    el('td', { text: a.number }),
    el('td', { text: fmtTime(a.launched_ms) }),
    el('td', { text: a.claimed_ms ? fmtDuration(a.claimed_ms - a.launched_ms) + ' later' : 'not yet' }),
    el('td', { text: a.ended_ms ? fmtDuration(a.ended_ms - (a.claimed_ms || a.launched_ms)) : 'running' }),
    el('td', null, a.outcome ? stateBadge(a.outcome) : ''),
    el('td', { className: 'mono', text: refText(a.ref) }),
    el('td', { text: a.owner || '' }),
    el('td', null, a.usage ? jsonView(a.usage) : ''),
    el('td', { text: a.error ? `${a.error.type}: ${a.error.message}` : '' })));
  return el('section', { className: 'card', id: 'attempts' }, el('h2', { text: 'Attempts' }),
    el('table', null,
      el('thead', null, el('tr', null, ['#', 'Launched', 'Claimed', 'Ran', 'Outcome', 'Launch reference', 'Owner', 'Usage', 'Error'].map((h) => el('th', { text: h })))),
      el('tbody', null, rows)));
}

// refText is a launch reference: provider, where, and the provider's ID.
function refText(ref) {
  if (!ref) return '';
  return [ref.provider, ref.account, ref.region, ref.resource, ref.id].filter(Boolean).join(' / ');
}
