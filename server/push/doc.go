// Package push delivers run changes to webhooks: the [Dispatcher] sends
// each push configuration ([sortie.PushConfig], kept by a
// [sortie.PushStore]) a signed message whenever its run changed.
//
// # Messages
//
// A message is a POST of JSON ([Payload]):
//
//	{"type": "sortie.run.updated", "timestamp_ms": 1767225600000, "data": {"run": {...}}}
//
// where the run is [PublicRun]'s view: no sealed configuration, request
// hash, resume input, checkpoint or launch ID. A configuration with
// another Format gets what [Options.Formats] renders for it instead (for
// "a2a", server/a2a's A2A task: {"task": {...}}). It is signed per Standard
// Webhooks with the host's key the configuration names ([Keys], package
// crypto/sign): headers webhook-id, webhook-timestamp and
// webhook-signature. The webhook-id is [MessageID] of (run, configuration,
// run version), the same on every redelivery, so a receiver that
// remembers the IDs it accepted (sign.Verifier does) drops duplicates,
// answering them 2xx ("already processed": sign.Verifier.Middleware
// does); a 401 to a redelivery is a failure, retried until MaxFailures.
//
// A configuration with a SealedToken (an A2A client's push token, sealed
// by the host) has it opened by [Options.OpenToken] for each delivery and
// sent in the headers [TokenHeader] and [TokenHeaderPrefixed]. The
// plaintext exists in memory only, in that request: never in the store,
// a log, an error or LastError.
//
// # Guarantees
//
//   - At least once. Progress is kept in the store
//     ([sortie.PushDelivery]): a configuration whose DeliveredVersion is
//     below its run's version is pending until delivered or given up, in
//     this process or, after a restart, in the next host's. A delivery
//     interrupted by [Dispatcher.Shutdown] records nothing and is made
//     again.
//   - Coalesced: every message carries the run's current state, read when
//     the delivery starts. A run that changed several times since the last
//     delivery is sent once, as it is now; intermediate versions are not
//     sent. A change that only moves the lease, the version and the update
//     time (a heartbeat) is not sent on its own (a restarted host, which
//     does not know what was sent, may send it once). The terminal state
//     is always delivered, and then the configuration is Done.
//   - In order: deliveries to one configuration are made one at a time,
//     each of a version above the one before (never version 5 after 7).
//   - Once per version across hosts: before delivering, a dispatcher
//     takes (or renews) the configuration's delivery lease in the store
//     ([sortie.PushStore.LeasePushDelivery], for twice RequestTimeout
//     and 5 s, under [Options.Owner]) and compares the run with the
//     progress the lease returns. The owner goes on delivering the run's
//     next versions; another host takes over once the lease ends. Hosts
//     sharing one store therefore deliver each version once; only a host
//     that stops between a delivery and its record (a crash) leaves it to
//     be made again once its lease ends, and a receiver drops that
//     duplicate by webhook-id. A delivery interrupted by Shutdown ends
//     its lease at once.
//
// # Failures
//
// A 2xx response is a delivery. 410 Gone ends the configuration (the
// receiver unsubscribed). Any other status, a transport error or a
// timeout is a failure: Failures counts it, NextAttemptMs is set after an
// exponential backoff with full jitter, and LastError says "status 503"
// or the transport error without the URL's query. After MaxFailures
// consecutive failures the configuration is Done with its last error. A
// configuration naming an unknown signing key or a format without a
// renderer, or holding a sealed token this host cannot open, is Done at
// once with LastError saying so. Response
// bodies are never interpreted: at most [MaxResponseBytes] are read and
// discarded. Redirects are the HTTP client's: build it with the
// destination policy (destination.Policy.Client()), which checks every
// address it dials.
//
// # Wiring
//
// The host creates one dispatcher over its control plane, runs
// [Dispatcher.Run] in a goroutine, calls [Dispatcher.Notify] when a run or
// its push configurations change, and calls [Dispatcher.Shutdown] on the
// way out. The sweep of [Dispatcher.Run] also finds changes written by
// other processes (workers reporting to the control plane directly) and
// retries that came due: each sweep reads the store's pending
// configurations page by page ([Options.SweepLimit]), up to
// [Options.SweepMax], and the next sweep continues where it stopped, so
// configurations of live runs that are up to date never hide one that is
// not.
package push
