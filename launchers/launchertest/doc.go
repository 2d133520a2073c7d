// Package launchertest is the conformance suite every [sortie.Launcher]
// runs: [RunConformanceTests] drives a real [sortie.Engine] and
// [sortie.Client] over the launcher and the control plane its workers
// report to, with the programmable test agent functions/probe (runtime
// "go:probe"), and checks the properties the engine relies on: a run
// completes with its events in order; a duplicate Start executes once;
// cancel stops a running attempt within a heartbeat and a second; retryable
// failures retry, others fail at once; a crashed worker's lease expires and
// the reconciler retries it, keeping every event; interrupts resume; and
// Describe reports the provider's phases.
//
// Provider differences are [Harness] capability methods, never skips.
package launchertest
