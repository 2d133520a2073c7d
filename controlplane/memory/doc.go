// Package memory implements [sortie.ControlPlane] in process memory: a
// mutex and maps, with deep copies in and out so callers never share a run
// with the store. It applies the transitions of package
// [github.com/sortie-run/sortie/controlplane] like every driver and passes
// the conformance suite in controlplanetest. It also implements
// [sortie.Notifier]. Nothing survives the process:
// use it in tests and for single-process embedding where durability does
// not matter; the durable default is controlplane/sqlite.
package memory
