// Package controlplane holds the run transitions every [sortie.ControlPlane]
// applies: pure functions that check a transition's conditions against a run
// and change the run in place, or return the sentinel error the interface
// contract names. A driver loads the run, applies a transition and stores
// the run conditionally (in a transaction, or on the run's Version), so all
// drivers share one set of rules and the conformance suite in
// controlplane/controlplanetest proves each driver keeps them.
//
// Sub-packages: memory (in-process), sqlite (embedded, durable) and the
// conformance suite controlplanetest.
package controlplane
