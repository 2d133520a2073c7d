// Package controlplanetest is the conformance suite of [sortie.ControlPlane]
// drivers. A driver's test calls [RunConformanceTests] with a function that
// makes a [Harness]; the suite then proves, one subtest per property, that
// the driver keeps the contract: idempotent reservations, ordered gap-free
// events per attempt, one claim per attempt, first terminal write wins,
// sticky cancellation, leases the reconciler sees, resume, durable steps
// (recorded once by a live claim, a conflict on other content, seen by
// every later attempt, immutable once the run is terminal), listing with
// opaque page tokens, following across attempts, and the error sentinels.
// The contract includes push configurations ([sortie.PushStore]):
// configurations per run, replacement, the per-run limit, a delivered
// version that never decreases, the pending set.
//
// Backend differences are harness capability methods (for example
// [Harness.SharedAcrossProcesses]); the suite runs the subtests a driver's
// capabilities call for and never skips.
package controlplanetest
