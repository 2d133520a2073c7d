// The UI's entry: the session, the router (#/, #/runs/ID, #/new) and the
// login and new-run forms.
import { el, clear } from './dom.js';
import { client } from './api.js';
import { listView } from './list.js';
import { runView } from './run.js';

const api = client('');
const main = document.getElementById('main');
const statusLine = document.getElementById('status');
const logoutButton = document.getElementById('logout');
let dispose = () => {};

function route() {
  dispose();
  dispose = () => {};
  const [path, query] = location.hash.replace(/^#/, '').split('?');
  const run = /^\/runs\/([0-9A-Za-z]{26})$/.exec(path || '/');
  if (run) dispose = runView(main, api, run[1].toUpperCase());
  else if (path === '/new') newRunView();
  else dispose = listView(main, api, new URLSearchParams(query || ''));
}

function loginView(message) {
  dispose();
  dispose = () => {};
  logoutButton.hidden = true;
  const token = el('input', { id: 'token', type: 'password', autocomplete: 'current-password', placeholder: 'API token', required: true });
  const err = el('p', { className: 'error', text: message || '' });
  clear(main, el('section', { className: 'card narrow' },
    el('h1', { text: 'Log in' }),
    el('p', { text: 'This host needs an API token. It is exchanged for a session cookie this page cannot read; the token is not stored in the browser.' }),
    el('form', { id: 'login-form', onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api.login(token.value);
        token.value = '';
        loggedIn();
      } catch (x) {
        token.value = '';
        err.textContent = x.status === 401 ? 'The host refused this token.' : 'Login failed: ' + x.message;
      }
    } }, token, el('button', { type: 'submit', text: 'Log in' })),
    err));
  token.focus();
}

function newRunView() {
  const f = {
    agent: el('input', { id: 'new-agent', placeholder: 'agent name, e.g. textstats', required: true, maxLength: 64 }),
    vars: el('textarea', { id: 'new-variables', rows: 6, placeholder: '{"top": 5}', spellcheck: false }),
    context: el('input', { id: 'new-context', placeholder: 'context ID (optional)', maxLength: 256 }),
    key: el('input', { id: 'new-key', placeholder: 'idempotency key (optional)', maxLength: 255 }),
  };
  const err = el('p', { className: 'error' });
  async function submit(e) {
    e.preventDefault();
    err.textContent = '';
    const req = { agent: f.agent.value.trim() };
    try {
      if (f.vars.value.trim()) req.variables = JSON.parse(f.vars.value);
    } catch (x) {
      err.textContent = 'Variables are not JSON: ' + x.message;
      return;
    }
    if (f.context.value.trim()) req.context_id = f.context.value.trim();
    if (f.key.value.trim()) req.idempotency_key = f.key.value.trim();
    try {
      const run = await api.submit(req);
      location.hash = '#/runs/' + run.id;
    } catch (x) {
      err.textContent = 'Submit refused: ' + x.message + (x.field ? ` (${x.field})` : '');
    }
  }
  clear(main, el('section', { className: 'card narrow' },
    el('h1', { text: 'New run' }),
    el('form', { id: 'new-run', className: 'stack', onsubmit: submit },
      el('label', { htmlFor: 'new-agent', text: 'Agent' }), f.agent,
      el('label', { htmlFor: 'new-variables', text: 'Variables (JSON)' }), f.vars,
      el('label', { htmlFor: 'new-context', text: 'Context' }), f.context,
      el('label', { htmlFor: 'new-key', text: 'Idempotency key' }), f.key,
      el('button', { type: 'submit', text: 'Submit' })),
    err));
}

function loggedIn() {
  statusLine.textContent = '';
  window.removeEventListener('hashchange', route);
  window.addEventListener('hashchange', route);
  route();
}

async function start() {
  api.onUnauthenticated(() => loginView('Your session ended; log in again.'));
  logoutButton.addEventListener('click', async () => {
    try { await api.logout(); } finally { loginView(); }
  });
  try {
    if (!(await api.session())) await api.login(''); // a host without API tokens takes the empty token
    logoutButton.hidden = false;
    loggedIn();
  } catch (e) {
    if (e.status === 401) loginView();
    else clear(main, el('p', { className: 'error', text: 'The host refused the UI: ' + e.message }));
  }
}

start();
