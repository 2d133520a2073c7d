// Package server is the host's HTTP API over a [sortie.Engine]: what
// `sortie serve` listens with, and what package httpengine (the Go client's
// HTTP transport) and `sortie --host URL` talk to.
//
// Routes (JSON bodies, defined with the error codes in package wire;
// errors are [wire.ErrorBody] with a stable code and, for bad input, the
// field):
//
//	POST   /v1/runs                               submit; Idempotency-Key header (once); 201 new, 200 existing
//	GET    /v1/runs?agent=&state=&context_id=&page_size=&page_token=
//	GET    /v1/runs/{id}                          ?wait_ms=: a long poll, answered when the run settles
//	GET    /v1/runs/{id}/events                   SSE (Accept: text/event-stream; Last-Event-ID;
//	                                              the final run's ID ATTEMPT.SEQ.end: 204 after it)
//	                                              or JSON [wire.EventsPage] (?after=ATTEMPT.SEQ&limit=&wait_ms=)
//	DELETE /v1/runs/{id}                          a terminal run and its objects: 204; 409 when live
//	POST   /v1/runs/{id}/cancel                   {"reason"}
//	POST   /v1/runs/{id}/resume                   {"input"}; 409 terminal or conflict naming the state
//	PUT    /v1/runs/{id}/push-configs/{cid}       {"url", "key_id"}
//	GET    /v1/runs/{id}/push-configs[/{cid}]
//	DELETE /v1/runs/{id}/push-configs/{cid}
//	GET    /v1/agents                             the host's agents: [wire.AgentList]
//	GET    /v1/agents/{name}                      one agent: its manifest, the host's policy
//	                                              defaults applied, with its input_schema
//	POST   /v1/worker/{claim,heartbeat,events,complete}   worker callbacks (Options.Callbacks)
//	GET    /.well-known/agent-card.json, /a2a     the A2A binding (Options.A2A)
//	GET    /healthz
//	GET    /metrics                               Prometheus text format (Options.Metrics), API auth
//	GET    /ui/                                   the web UI (Options.UI; package server/ui)
//
// Every request body is size-limited, is JSON (a Content-Type other than
// application/json, or a Content-Encoding other than identity, is
// answered 415; a leading byte-order mark 400), holds no object key twice and is
// validated against a JSON Schema (santhosh-tekuri/jsonschema, draft
// 2020-12; the schemas are in schemas/) before anything runs, then by the
// sortie types' own checks. A query parameter the route does not take, or
// one given more than once, is answered 400 naming it, as is an
// Authorization, Content-Type, Last-Event-ID or Idempotency-Key header
// given more than once (on every route, before authentication). Another method on a route's path is answered
// 405 with Allow; a path with ".", ".." or empty segments 400.
//
// Event streams: each event is "id: ATTEMPT.SEQ", "event: event" and its
// JSON; the stream ends with "event: run" and the final (terminal or
// interrupted) run, its payloads kept by reference as references only:
// GET /v1/runs/{id} reads them back (or answers 500 payload_integrity
// naming the object's key and SHA-256), so a payload that cannot be read
// never stops the events. A client that reconnects with Last-Event-ID gets the
// events after that ID: nothing lost, nothing repeated. All followers of a
// run share one reader of the control plane (woken by in-process changes,
// else polling every Options.FollowPoll), so followers cost memory, not
// reads.
//
// [Server.Serve] shuts down gracefully: no new connections, live streams
// end (clients resume elsewhere with Last-Event-ID), long polls answer
// 200 at once with the run as it is or the events so far, requests in
// flight finish and the launches they began are handed to the launcher,
// within its grace; past it, the requests still in flight are cut off and
// it returns a [*GraceExceededError] saying how many.
package server
