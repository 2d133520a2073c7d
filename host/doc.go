// Package host builds a complete Sortie host from one [Config]: the
// control plane (the embedded SQLite state in Config.StateDir, or the
// DynamoDB table of Config.AWS), the launcher (local workers as
// subprocesses or in-process, the Lambda function of Config.AWS, the Cloud
// Run Job or service of Config.GCP, or any [sortie.Launcher]), the
// keyrings (the state directory's local key, the AWS KMS keyring of
// Config.AWS or the Cloud KMS keyring of Config.GCP), the
// engine and its client, the reconciler and, with Config.API, the server:
// the HTTP API of package server with A2A, signed worker callbacks (an
// issuer for the engine and the callback routes) and push webhook
// delivery, every outbound call through the destination policy.
//
//	h, err := host.New(ctx, host.Config{StateDir: ".sortie", API: &host.API{}})
//	...
//	defer h.Close()
//	ln, _ := net.Listen("tcp", "127.0.0.1:7780")
//	err = h.Serve(ctx, ln) // until ctx ends, then a graceful drain
//
// The sortie CLI is flag parsing over this package (`sortie serve` is
// [New] and [Host.Serve]; the other commands use [Host.Client]), and its
// worker command rebuilds a host's [NewWorker] from the variables the host
// passes its worker subprocesses ([EnvStateDir], ...). Package
// host/telemetry sets up OpenTelemetry for the process.
//
// The cloud binaries build their hosts from the subpackages, which link no
// HTTP API, A2A or CLI package: host/awshost (the AWS parts and the Lambda
// function; it links no SQLite or gRPC either, so the Lambda bootstrap
// stays lean), host/gcphost (the Cloud Run container, and the Google Cloud
// parts of Config.GCP) and host/builtin (the built-in agents).
package host
