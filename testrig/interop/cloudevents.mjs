// The CloudEvents JavaScript SDK posting events to the host's
// /v1/events, in binary and structured mode: each starts one run through
// the trigger rules (the Go test's rules file), and a redelivery of the
// same (source, id) starts no second run.
import assert from 'node:assert/strict';
import { CloudEvent, HTTP } from 'cloudevents';
import { authFetch, base, report } from './lib.mjs';

async function post(message) {
  const res = await authFetch(base + '/v1/events', { method: 'POST', headers: message.headers, body: message.body });
  const text = await res.text();
  assert.equal(res.status, 200, `POST /v1/events = ${res.status} ${text}`);
  return JSON.parse(text).outcomes;
}

const runs = {};
for (const [mode, encode] of [['binary', HTTP.binary], ['structured', HTTP.structured]]) {
  const ce = new CloudEvent({ id: `interop-${mode}-${Date.now()}`, source: '/interop/js', type: 'run.interop.requested', datacontenttype: 'application/json', data: { n: mode } });
  const [first] = await post(encode(ce));
  assert.equal(first.result, 'started', `${mode}: ${JSON.stringify(first)}`);
  assert.equal(first.agent, 'probe');
  const [again] = await post(encode(ce));
  assert.equal(again.run_id, first.run_id, `${mode} redelivery: ${JSON.stringify(again)}`);
  assert.notEqual(again.result, 'started', `${mode} redelivery started a second run`);
  runs[mode] = first.run_id;
}
report({ runs });
