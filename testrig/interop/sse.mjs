// A standard EventSource client (the eventsource package) following a
// run: the network cuts the first stream after two events, the client
// reconnects by itself with Last-Event-ID and loses nothing; after the
// final "run" event it reconnects once more, gets 204 and stops.
import assert from 'node:assert/strict';
import { EventSource } from 'eventsource';
import { api, authFetch, base, report, waitFor } from './lib.mjs';

const run = await api('POST', '/v1/runs', { agent: 'probe', variables: { events: 6, interval_ms: 20 } }, 201);
const statuses = [];
const lastIDs = [];
// cutAfter ends a response body after n SSE events, like a dropped connection.
function cutAfter(res, n) {
  const reader = res.body.getReader();
  let seen = 0;
  const body = new ReadableStream({
    async pull(ctrl) {
      const { value, done } = await reader.read();
      if (done || seen >= n) { reader.cancel().catch(() => {}); ctrl.close(); return; }
      seen += new TextDecoder().decode(value).split('event: event\n').length - 1;
      ctrl.enqueue(value);
    },
  });
  return new Response(body, { status: res.status, headers: res.headers });
}
const es = new EventSource(`${base}/v1/runs/${run.id}/events`, {
  fetch: async (input, init) => {
    lastIDs.push(new Headers(init.headers).get('last-event-id'));
    const res = await authFetch(input, init);
    statuses.push(res.status);
    return statuses.length === 1 ? cutAfter(res, 2) : res;
  },
});
const events = [];
const finals = [];
es.addEventListener('event', (m) => events.push({ id: m.lastEventId, seq: JSON.parse(m.data).seq }));
es.addEventListener('run', (m) => finals.push({ id: m.lastEventId, state: JSON.parse(m.data).state }));
await waitFor('the EventSource to close after the end', () => es.readyState === EventSource.CLOSED);

assert.equal(finals.length, 1, `run events ${JSON.stringify(finals)}, want one`);
assert.equal(finals[0].state, 'completed');
assert.deepEqual(events.map((e) => e.id), ['1.1', '1.2', '1.3', '1.4', '1.5', '1.6'], 'event IDs across the cut, each once');
assert.equal(finals[0].id, '1.6.end', 'the final run event carries the end ID');
assert.equal(statuses.at(-1), 204, `statuses ${statuses}: the reconnect after the end gets 204`);
assert.equal(lastIDs.at(-1), '1.6.end');
report({ run: run.id, events: events.map((e) => e.id), final: finals[0], statuses, last_event_ids: lastIDs });
