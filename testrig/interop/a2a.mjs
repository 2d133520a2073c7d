// The official A2A JavaScript SDK against Sortie, over the binding named
// by A2A_BINDING (JSONRPC or HTTP+JSON): send, stream, get, list,
// cancel (twice), resubscribe (live and finished) and push notification
// configuration CRUD.
import assert from 'node:assert/strict';
import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { authFetch, base, mustEnv, report, waitFor } from './lib.mjs';

const binding = mustEnv('A2A_BINDING');
const hookURL = mustEnv('HOOK_URL');
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch }), new RestTransportFactory({ fetchImpl: authFetch })],
  preferredTransports: [binding],
}));
const client = await factory.createFromUrl(base);
const contextId = `interop-${binding}-${Date.now()}`;

function message(vars, extra = {}) {
  return {
    messageId: crypto.randomUUID(), role: Role.ROLE_USER, contextId,
    parts: [{ content: { $case: 'data', value: vars } }], metadata: { skill: 'probe' }, ...extra,
  };
}
const stateOf = (t) => t.status?.state;

// send, blocking until the task finishes
const done = await client.sendMessage({ message: message({ events: 2, output: { binding } }) });
assert.equal(stateOf(done), TaskState.TASK_STATE_COMPLETED, `sendMessage: ${JSON.stringify(done)}`);
assert.deepEqual(done.artifacts[0].parts[0].content, { $case: 'data', value: { binding } });

// stream: the task first, then updates, ending completed
const streamed = [];
for await (const ev of client.sendMessageStream({ message: message({ events: 3, interval_ms: 5 }) })) streamed.push(ev.payload);
assert.equal(streamed[0].$case, 'task', `first streamed event ${JSON.stringify(streamed[0])}`);
const streamID = streamed[0].value.id;
const last = streamed.at(-1);
assert.equal(last.$case, 'statusUpdate');
assert.equal(last.value.status.state, TaskState.TASK_STATE_COMPLETED);
const cursors = streamed.filter((p) => p.$case === 'statusUpdate' && p.value.metadata?.['sortie/cursor']).map((p) => p.value.metadata['sortie/cursor']);
assert.deepEqual(cursors.slice(0, 3), ['1.1', '1.2', '1.3'], 'each run event streamed once, in order');

// get and list
const got = await client.getTask({ id: streamID });
assert.equal(stateOf(got), TaskState.TASK_STATE_COMPLETED);
const listed = await client.listTasks({ contextId, pageSize: 10, status: TaskState.TASK_STATE_UNSPECIFIED });
assert.deepEqual(new Set(listed.tasks.map((t) => t.id)), new Set([done.id, streamID]), 'listTasks of the context');

// a live task: resubscribe (the task first), push CRUD, cancel twice
const live = await client.sendMessage({ message: message({ events: 0, until_cancelled: true, interval_ms: 10 }), configuration: { returnImmediately: true } });
const sub = client.resubscribeTask({ id: live.id })[Symbol.asyncIterator]();
const first = await sub.next();
assert.equal(first.value?.payload?.$case, 'task', `resubscribe's first event ${JSON.stringify(first.value)}`);
assert.equal(first.value.payload.value.id, live.id);

const cfg = await client.createTaskPushNotificationConfig({ taskId: live.id, id: 'interop', url: hookURL, token: 'interop-push-token' });
assert.equal(cfg.id, 'interop');
assert.equal(cfg.url, hookURL);
const again = await client.getTaskPushNotificationConfig({ taskId: live.id, id: 'interop' });
assert.equal(again.url, hookURL);
assert.ok(!again.token, 'the push token is never read back');
const cfgs = await client.listTaskPushNotificationConfig({ taskId: live.id });
assert.deepEqual(cfgs.configs.map((c) => c.id), ['interop']);
await client.createTaskPushNotificationConfig({ taskId: live.id, id: 'gone', url: hookURL });
await client.deleteTaskPushNotificationConfig({ taskId: live.id, id: 'gone' });
assert.deepEqual((await client.listTaskPushNotificationConfig({ taskId: live.id })).configs.map((c) => c.id), ['interop']);

const cancelled = await client.cancelTask({ id: live.id });
assert.equal(stateOf(cancelled), TaskState.TASK_STATE_CANCELED);
const cancelledAgain = await client.cancelTask({ id: live.id });
assert.equal(stateOf(cancelledAgain), TaskState.TASK_STATE_CANCELED, 'cancelling a cancelled task returns it');
let end;
for (let r = await sub.next(); !r.done; r = await sub.next()) end = r.value.payload;
assert.equal(end?.value?.status?.state, TaskState.TASK_STATE_CANCELED, `resubscribed stream's last event ${JSON.stringify(end)}`);
await assert.rejects(client.cancelTask({ id: done.id }), (e) => /not ?cancel/i.test(e.constructor.name + e.message), 'a completed task is not cancelable');

// a finished task cannot be subscribed to: an error, not an empty stream
let finishedErr;
try {
  for await (const ev of client.resubscribeTask({ id: done.id })) assert.fail(`event from a finished task: ${JSON.stringify(ev)}`);
} catch (e) {
  finishedErr = `${e.constructor.name}: ${e.message}`;
}
assert.match(finishedErr ?? '', /terminal state/, 'resubscribe to a finished task fails');
await waitFor('the live task to be cancelled', async () => stateOf(await client.getTask({ id: live.id })) === TaskState.TASK_STATE_CANCELED);

report({ binding, context_id: contextId, completed: [done.id, streamID], cancelled: live.id, streamed: streamed.map((p) => p.$case), finished_error: finishedErr });
