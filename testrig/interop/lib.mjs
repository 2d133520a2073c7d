// Shared helpers of the interop scripts. Each script reads the host's URL
// and API token from SORTIE_URL and SORTIE_TOKEN, checks what it drives
// with node:assert (a failure exits non-zero with the assertion), and
// prints one JSON line of what it saw last, for the Go test to cross-check
// against the host.
export const base = mustEnv('SORTIE_URL');
export const token = mustEnv('SORTIE_TOKEN');

export function mustEnv(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
}

// authFetch is fetch with the API token.
export function authFetch(input, init = {}) {
  const headers = new Headers(init.headers);
  headers.set('Authorization', 'Bearer ' + token);
  return fetch(input, { ...init, headers });
}

// api calls the Sortie HTTP API and returns the decoded JSON, asserting the status.
export async function api(method, path, body, want = 200) {
  const res = await authFetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== want) throw new Error(`${method} ${path} = ${res.status} ${text}, want ${want}`);
  return text ? JSON.parse(text) : null;
}

// waitFor polls cond every 20 ms until it returns a truthy value or ms pass.
export async function waitFor(what, cond, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// report prints the script's summary line.
export function report(summary) {
  process.stdout.write(JSON.stringify(summary) + '\n');
}
