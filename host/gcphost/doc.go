// Package gcphost assembles Sortie's Google Cloud parts: the Cloud Run
// container (cmd/sortie-cloudrun) from functions/cloudrun's [Env], and the
// keyring and launchers a host uses to run attempts there.
//
// The container: [OpenContainer] opens its control plane
// ([OpenControlPlane]: a DynamoDB table through host/awshost, an SQLite
// file, or none when attempts report over the host's signed callbacks),
// its Cloud KMS keyring ([OpenKeyring], crypto/gcpkms) and the worker that
// opens inline configuration with it, as the Lambda function does with AWS
// KMS; [NewService] is service mode (invocations POSTed by the launchers
// and, with trigger rules, CloudEvents from Eventarc, both behind Google ID
// tokens).
//
// AWS without a stored key: [AWSCredentials] is an AWS credentials
// provider that exchanges an ID token of the service account, from the
// metadata server, for an IAM role's temporary credentials with STS
// AssumeRoleWithWebIdentity, refreshing them before they expire. The
// role trusts accounts.google.com for the service account's unique ID
// (terraform/aws's cloudrun_worker role).
//
// A host launching on Cloud Run seals each attempt's configuration with the
// same keyring ([OpenKeyring]'s Config as the engine's Sealer) and starts
// attempts with the Jobs launcher ([OpenJobs]) or the service launcher.
//
// It is separate from package host so the container links no HTTP API,
// A2A or CLI package.
//
// [Env]: https://pkg.go.dev/github.com/sortie-run/sortie/functions/cloudrun#Env
package gcphost
