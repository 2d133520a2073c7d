// The interactive example: submit the same agent to the embedded host or
// to the remote one, and show each run's stream with the web UI's own
// modules. Every call goes to the chosen host's UI API (session cookie,
// CSRF token), relative to this page.
import { client } from './embedded/ui/assets/js/api.js';
import { el, clear, jsonView, stateBadge } from './embedded/ui/assets/js/dom.js';
import { Timeline } from './embedded/ui/assets/js/timeline.js';

const hosts = { embedded: client('embedded/ui/'), remote: client('remote/ui/') };
const streams = {};
const form = document.getElementById('run-form');
const agent = document.getElementById('agent');
const variables = document.getElementById('variables');
const formError = document.getElementById('form-error');
const examples = { textstats: '{"top": 5}', probe: '{"events": 20, "interval_ms": 100}' };

agent.addEventListener('change', () => { variables.value = examples[agent.value]; });

async function session(api) {
  if (!(await api.session())) await api.login(''); // the example's hosts take no API token
}

// show follows run on mode's host into its lane.
function show(mode, run) {
  const api = hosts[mode];
  if (streams[mode]) streams[mode].close();
  const timeline = new Timeline();
  const state = el('span', { className: 'lane-state' }, stateBadge(run.state));
  const result = el('div', { className: 'lane-result' });
  clear(document.getElementById('lane-' + mode),
    el('h2', null, mode === 'embedded' ? 'Embedded ' : 'Remote ', state,
      el('a', { href: '#', text: run.id, className: 'mono run-id' })),
    timeline.node, result);
  // The run's own page is on the host's UI, outside this page's hash routes.
  document.querySelector(`#lane-${mode} a.run-id`).addEventListener('click', (e) => {
    e.preventDefault();
    location.assign(`${mode}/ui/#/runs/${run.id}`);
  });
  streams[mode] = api.follow(run.id, '', {
    onEvent: (ev, cursor) => timeline.add(ev, cursor),
    onRun: (final) => {
      clear(state, stateBadge(final.state));
      clear(result, final.result !== undefined ? jsonView(final.result, 'result')
        : final.error ? el('p', { className: 'error', text: `${final.error.type}: ${final.error.message}` }) : null);
    },
  });
}

form.addEventListener('submit', async (e) => {
  e.preventDefault();
  formError.textContent = '';
  const mode = new FormData(form).get('mode');
  const req = { agent: agent.value };
  try {
    if (variables.value.trim()) req.variables = JSON.parse(variables.value);
  } catch (x) {
    formError.textContent = 'Variables are not JSON: ' + x.message;
    return;
  }
  try {
    await session(hosts[mode]);
    show(mode, await hosts[mode].submit(req));
  } catch (x) {
    formError.textContent = `The ${mode} host refused the run: ${x.message}`;
  }
});
