// Package sortie runs remote executions ("runs") of agents and functions on
// serverless compute behind a durable control plane.
//
// The package holds the core types every other package imports: run IDs and
// [State]s, the versioned worker [Invocation] and the worker [Message]s, the
// two portable interfaces [ControlPlane] and [Launcher] with their error
// contracts, the sentinel errors, the [Engine] that combines a control plane
// and a launcher (reserve → seal → record launch → start, and reconcile), and
// the [Client] that submits, follows, cancels, resumes and waits on runs of
// any [ExecutionEngine].
//
// Implementations live in sub-packages: controlplane/memory,
// controlplane/sqlite, launchers/local, and the worker runtime in functions.
// Every control plane passes controlplane/controlplanetest and every launcher
// passes launchers/launchertest.
package sortie
