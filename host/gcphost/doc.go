// Package gcphost assembles Sortie's Google Cloud Run container
// (cmd/sortie-cloudrun) from functions/cloudrun's [Env]: the control plane
// it names ([OpenControlPlane]: a DynamoDB table through host/awshost, or
// an SQLite file), service mode ([NewService]: invocations POSTed by the
// Jobs and services launchers and, with trigger rules, CloudEvents from
// Eventarc, both behind Google ID tokens) and the Cloud Run Jobs launcher
// of triggered runs ([OpenJobs], which any host can use as its launcher).
//
// It is separate from package host so the container links no HTTP API,
// A2A or CLI package.
//
// [Env]: https://pkg.go.dev/github.com/sortie-run/sortie/functions/cloudrun#Env
package gcphost
