// Command service is the Restate side of Sortie's submit→result comparison: a
// Restate service "Bench" with one handler, "Run", that does one no-op unit of
// work as a durable restate.Run step (journaled by the Restate server before
// the handler continues), mirroring one Sortie run of the probe agent with no
// events. It serves the Restate endpoint protocol (HTTP/2 cleartext) on -addr,
// which must be a loopback address.
package main
