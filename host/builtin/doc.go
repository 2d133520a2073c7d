// Package builtin holds the agents every Sortie binary knows by name —
// textstats (examples/textstats) and probe (functions/probe, the
// programmable test agent) — and the Go handlers that run them, so the
// CLI, the Lambda function and the Cloud Run container offer the same
// ones. It links no control plane, launcher or server.
package builtin
