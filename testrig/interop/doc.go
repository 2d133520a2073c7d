// Package interop holds the interop suite: third-party clients, pinned in
// testrig/package.json, driving a real `sortie serve` on loopback. Its
// test builds cmd/sortie, starts `sortie serve` with an API token, trigger
// rules and loopback webhooks allowed, and runs the Node.js scripts beside
// it, each of which asserts what its client sees and prints a summary the
// test cross-checks against the host:
//
//   - a2a.mjs: the official A2A JavaScript SDK (@a2a-js/sdk) over
//     JSON-RPC and over the REST binding: send, stream, get, list, cancel
//     (twice), resubscribe (live and finished) and push configuration CRUD;
//   - sse.mjs: the eventsource package following a run's events through a
//     cut connection (resumed with Last-Event-ID) to a clean end (204);
//   - webhooks.mjs: the standardwebhooks package verifying push deliveries
//     of a run and of an A2A task, each redelivered with its webhook-id;
//   - cloudevents.mjs: the CloudEvents SDK posting events in binary and
//     structured mode to /v1/events.
//
// Then it scrapes /metrics and parses it with the Prometheus text parser
// (github.com/prometheus/common/expfmt). Node.js 20+ and `npm ci --prefix
// testrig` are required: without them the test fails and says so.
package interop
