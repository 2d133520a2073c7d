// Command sortie-lambda is Sortie's AWS Lambda function (provided.al2023):
// the worker that executes invocations and, with SORTIE_LAMBDA_MODE=
// reconciler, the reconciler of on-failure destination records and
// scheduled events. Its configuration comes from the environment only (the
// Env* constants of package github.com/sortie-run/sortie/functions/lambda).
// It registers the same handlers as the CLI's worker (package host/builtin:
// probe and textstats) and builds the function with package host/awshost.
//
// Variables and results over their inline limits go by reference: the
// worker reads and writes them through the presigned URLs the host seals
// into each invocation, opened with the KMS keyring (package
// payload/sealed, net/http alone: no S3 client in the bootstrap). With
// SORTIE_PAYLOAD_BUCKET the reconciler and the trigger grant the
// attempts they launch the same URLs, signed with their credentials by
// package payload/s3presign (the SDK's SigV4 signer alone), and the
// reconciler's retention (SORTIE_RETENTION) deletes an expired run's
// objects through DELETE URLs it signs the same way.
//
// With OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// set, it exports its spans over OTLP/HTTP (package host/telemetry) and
// flushes them before each handler returns: the attempt, claim and finish
// spans of a worker, the trigger, submit and launch spans of trigger mode,
// each under the trace its invocation or event carries. With the AWS
// Distro for OpenTelemetry collector layer (the aws-otel-collector
// Lambda layer for the function's architecture) set
// OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318; the layer's
// collector configuration decides where the spans go (X-Ray, any OTLP
// backend).
//
// Build it as the function's bootstrap, for arm64 or amd64:
//
//	GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -ldflags='-s -w' -trimpath -o bootstrap ./cmd/sortie-lambda
//
// That binary stays at most 12 MiB (TestBootstrapSize builds it and fails
// over the limit): it links no SQLite, HTTP server, gRPC or protobuf
// runtime, and the textstats document is embedded gzip-compressed.
package main
