// Command sortieload is the Sortie half of the side-by-side benchmark
// (bench/run.sh): it makes N runs of the probe agent with no events
// (unique idempotency keys, C in flight, each caller waiting for its
// run's result) through a path a user runs, after W unmeasured ones, and
// prints one line in Go benchmark format with runs/s and the p50 and p99
// submit→result latency in ms:
//
//   - embedded: host.New on a state directory, exactly what `sortie run`
//     opens (SQLite with synchronous FULL, the reconciler running), with
//     attempts on warm `sortie worker --session` processes (-worker, the
//     default) or in this process (-in-process);
//   - -url: a `sortie serve` over HTTP with the Go client (httpengine:
//     Client.Wait is the host's long poll), one kept-alive connection per
//     caller.
//
// With -table FILE it reads such lines (Restate's too) and prints the
// Markdown table of the README: per name, the mean runs/s and p50/p99 of
// its rounds and the ratios to Restate's.
package main
