// Package telemetry sets up a process's OpenTelemetry from the standard
// environment (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_SDK_DISABLED, ...):
// W3C Trace Context as the global propagator and, when an OTLP endpoint is
// configured, an OTLP/HTTP (protobuf) span exporter behind the global
// tracer provider. [StartTracing] is what every binary calls: `sortie`,
// the Lambda bootstrap and the Cloud Run container. It links no metrics
// SDK, so the Lambda bootstrap stays lean.
//
// A Lambda execution environment is frozen as soon as its handler
// returns, so the bootstrap starts [StartLambdaTracing], whose spans wait
// in memory until [Tracing.Flush], called before each handler returns
// (host/awshost's Flushing); with the AWS Distro for
// OpenTelemetry (ADOT) collector layer, OTEL_EXPORTER_OTLP_ENDPOINT is
// the layer's local receiver (http://localhost:4318), which forwards to
// X-Ray or any OTLP backend.

package telemetry
