// Package remotetest runs a Sortie host inside a test ([Host], [New],
// [Start]): an engine over a memory or SQLite control plane whose local
// launcher executes attempts in process with the probe agent
// (functions/probe). The transports of package remote and the A2A server
// test against it.
package remotetest
