// Command sortie-cloudrun is the Cloud Run container of Sortie's worker:
// the same functions/ core as `sortie worker` and sortie-lambda, configured
// by the environment (see LoadEnv in package
// github.com/sortie-run/sortie/functions/cloudrun).
//
// In job mode (the default) it executes the one invocation the launcher
// put in SORTIE_INVOCATION through RunJob's container overrides, and exits
// 0 once its outcome is stored (or a duplicate delivery's claim was
// refused), 1 when it could not be stored, 2 for a bad configuration.
// SIGTERM (CancelExecution, the task timeout) stops the attempt.
//
// In service mode (SORTIE_CLOUDRUN_MODE=service) it serves POST
// /invocations on PORT, accepting callers whose Google ID token has the
// audience SORTIE_SERVICE_AUDIENCE; it answers once the attempt is claimed
// and runs it in the background, so the service needs instance-based
// billing (CPU always allocated). SIGTERM ends the attempts still running
// and stores their outcomes.
//
// With OTEL_EXPORTER_OTLP_ENDPOINT set it exports its spans over
// OTLP/HTTP (package host/telemetry), flushed before it exits: each
// attempt's under its invocation's traceparent, and in service mode the
// requests' under the traceparent Cloud Run forwards.
//
// The control plane is the DynamoDB table of SORTIE_DYNAMODB_TABLE or the
// SQLite file of SORTIE_SQLITE_PATH (exactly one). Package host/gcphost
// assembles the container; its handlers are package host/builtin's.
//
// Variables and results over their inline limits (and a Jobs invocation
// that would not fit the 32 KiB environment value) go by reference: the
// container reads and writes them through the presigned URLs the host
// seals into each invocation, opened with its Cloud KMS keyring (package
// payload/sealed).
package main
