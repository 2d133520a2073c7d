// Command load is the load generator of Sortie's submit→result comparison
// with Restate: it optionally registers the Bench service with a Restate
// server's admin API, warms up, then makes -n synchronous ingress calls to
// Bench/Run, -c in flight, each with a unique idempotency key (the
// idempotency-key header) and each waiting for its result, the same shape as
// Sortie's BenchmarkSubmitToResult. It prints runs/s and the p50/p99
// submit→result latency in ms in the Go benchmark format. Every URL must point
// at a loopback address.
package main
