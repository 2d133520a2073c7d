// The host API as the UI calls it: through the UI's session routes
// (relative to base, the UI's URL: "" on the UI's own page), with the
// CSRF token on every change. The API token never reaches this page after
// login: the session cookie (HttpOnly) stands for it.

// APIError is a refusal of the API or the UI ({"error": {code, message, field}}).
export class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || '';
    this.field = e.field || '';
  }
}

// cursorAfter reports whether cursor a ("ATTEMPT.SEQ") is after b.
export function cursorAfter(a, b) {
  if (!b) return true;
  const [aa, as] = a.split('.').map(Number);
  const [ba, bs] = b.split('.').map(Number);
  return aa > ba || (aa === ba && as > bs);
}

// client returns the API of the UI at base ("" or e.g. "remote/ui/").
export function client(base) {
  let csrf = '';
  const listeners = [];

  // json decodes an answer; a 401 of an API call (not of a login) tells
  // the onUnauthenticated listeners.
  async function json(resp, isLogin) {
    const body = resp.status === 204 ? null : await resp.json().catch(() => null);
    if (!resp.ok) {
      const err = new APIError(resp.status, body);
      if (resp.status === 401 && !isLogin) listeners.forEach((f) => f(err));
      throw err;
    }
    return body;
  }

  const api = {
    // onUnauthenticated registers f, called when a call finds no session.
    onUnauthenticated(f) { listeners.push(f); },

    // session reports whether this browser is logged in.
    async session() {
      const s = await json(await fetch(base + 'session', { cache: 'no-store' }));
      csrf = s.csrf_token || '';
      return s.authenticated;
    },

    // login exchanges token ("" on a host without API tokens) for a session.
    async login(token) {
      const s = await json(await fetch(base + 'session', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token }),
      }), true);
      csrf = s.csrf_token;
    },

    async logout() {
      await json(await fetch(base + 'session', { method: 'DELETE', headers: { 'X-CSRF-Token': csrf } }));
      csrf = '';
    },

    // call sends method path (under /v1) with body as JSON.
    async call(method, path, body, headers) {
      const h = Object.assign({}, headers);
      if (body !== undefined) h['Content-Type'] = 'application/json';
      if (method !== 'GET' && method !== 'HEAD') h['X-CSRF-Token'] = csrf;
      return json(await fetch(base + 'api/v1' + path, {
        method, headers: h, cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body),
      }));
    },

    get: (path) => api.call('GET', path),
    run: (id) => api.get('/runs/' + encodeURIComponent(id)),
    cancel: (id, reason) => api.call('POST', `/runs/${encodeURIComponent(id)}/cancel`, { reason }),
    resume: (id, input) => api.call('POST', `/runs/${encodeURIComponent(id)}/resume`, { input }),
    submit: (req) => api.call('POST', '/runs', req),

    // follow streams the run's events after cursor `after` (""
    // for all) over SSE. The browser reconnects after a blip with
    // Last-Event-ID; events at or before the last one seen are dropped, so
    // nothing repeats. h.onEvent(event, cursor) for each event,
    // h.onRun(run) once with the final (terminal or interrupted) run,
    // h.onStatus(status, detail) with "live", "reconnecting", "ended" or
    // "error". It returns {close(), cursor()}.
    follow(id, after, h) {
      let last = after || '';
      let es = null;
      let done = false;
      let timer = 0;
      let delay = 500;
      const open = () => {
        const q = last ? '?after=' + encodeURIComponent(last) : '';
        es = new EventSource(`${base}api/v1/runs/${encodeURIComponent(id)}/events${q}`);
        es.onopen = () => { delay = 500; h.onStatus && h.onStatus('live'); };
        es.addEventListener('event', (m) => {
          if (!cursorAfter(m.lastEventId, last)) return;
          last = m.lastEventId;
          h.onEvent(JSON.parse(m.data), m.lastEventId);
        });
        es.addEventListener('run', (m) => {
          done = true;
          es.close();
          h.onStatus && h.onStatus('ended');
          h.onRun && h.onRun(JSON.parse(m.data));
        });
        es.addEventListener('error', (m) => {
          if (done) return;
          if (m.data) { // the server's "event: error" with an error body
            done = true;
            es.close();
            h.onStatus && h.onStatus('error', new APIError(0, JSON.parse(m.data)));
            return;
          }
          h.onStatus && h.onStatus('reconnecting');
          if (es.readyState === EventSource.CLOSED) giveUpOrRetry(); // refused: the browser gave up
        });
      };
      // giveUpOrRetry asks why the stream was refused: a refusal of the
      // run itself (no session, not found) ends the stream; anything
      // else (the host restarting) is retried with backoff.
      const giveUpOrRetry = () => {
        const retry = () => { if (!done) timer = setTimeout(open, delay); delay = Math.min(delay * 2, 5000); };
        api.run(id).then(retry, (err) => {
          if (!(err instanceof APIError) || err.status >= 500) return retry();
          done = true;
          h.onStatus && h.onStatus('error', err);
        });
      };
      open();
      return {
        close() { done = true; clearTimeout(timer); if (es) es.close(); },
        cursor: () => last,
      };
    },
  };
  return api;
}
