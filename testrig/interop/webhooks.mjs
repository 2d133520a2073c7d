// A Standard Webhooks receiver (the standardwebhooks package) of the
// host's push deliveries: a run's configuration set over the HTTP API and
// an A2A task's set with the A2A JavaScript SDK (with its token). The
// receiver answers each message's first delivery 503, so the host
// redelivers it; the redelivery must keep its webhook-id and verify
// again. Deliveries that fail verification are answered 401 and fail the
// script.
import assert from 'node:assert/strict';
import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { Role } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { api, authFetch, base, mustEnv, report, waitFor } from './lib.mjs';

const wh = new Webhook(mustEnv('WEBHOOK_SECRET'));
const seen = new Map(); // webhook-id -> deliveries
const verified = []; // {path, id, body, token}
const refused = [];
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    let payload;
    try {
      payload = wh.verify(body, req.headers);
    } catch (e) {
      refused.push(`${req.url}: ${e.message}`);
      res.writeHead(401).end();
      return;
    }
    const id = req.headers['webhook-id'];
    const n = (seen.get(id) ?? 0) + 1;
    seen.set(id, n);
    if (n === 1) { // the first delivery of each message fails: the host must redeliver it
      res.writeHead(503).end();
      return;
    }
    verified.push({ path: req.url, id, payload, token: req.headers['a2a-notification-token'] });
    res.writeHead(204).end();
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const hook = `http://127.0.0.1:${server.address().port}`;

// A run of the HTTP API.
const run = await api('POST', '/v1/runs', { agent: 'probe', variables: { events: 1, sleep_ms: 50 } }, 201);
await api('PUT', `/v1/runs/${run.id}/push-configs/interop`, { url: hook + '/run' });
const final = await waitFor('a verified webhook of the completed run', () =>
  verified.find((d) => d.path === '/run' && d.payload.data?.run?.state === 'completed'));
assert.equal(final.payload.type, 'sortie.run.updated');
assert.equal(final.payload.data.run.id, run.id);

// An A2A task with a push configuration and a token (the A2A format).
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
}));
const client = await factory.createFromUrl(base);
const task = await client.sendMessage({
  message: { messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: 'data', value: { events: 0, until_cancelled: true, interval_ms: 10 } } }], metadata: { skill: 'probe' } },
  configuration: { returnImmediately: true, taskPushNotificationConfig: { id: 'a2a', url: hook + '/task', token: 'interop-token-of-the-task' } },
});
await client.cancelTask({ id: task.id });
const cancelled = await waitFor('a verified webhook of the cancelled task', () =>
  verified.find((d) => d.path === '/task' && d.payload.task?.status?.state === 'TASK_STATE_CANCELED'));
assert.equal(cancelled.payload.task.id, task.id);
assert.equal(cancelled.token, 'interop-token-of-the-task');

assert.deepEqual(refused, [], 'every delivery verifies');
for (const [id, n] of seen) assert.ok(n >= 1, id);
const redelivered = verified.filter((d) => seen.get(d.id) >= 2).length;
assert.equal(redelivered, verified.length, 'every accepted message was a redelivery with the same webhook-id');
server.close();
report({ run: run.id, task: task.id, deliveries: [...seen.values()].reduce((a, b) => a + b, 0), verified: verified.length, ids: [...seen.keys()] });
