// Package awssecrets is the AWS Secrets Manager [functions.SecretSource]
// of configuration references ("aws_secret" in a host's allowlist): a
// reference's value is its secret's current SecretString (or
// SecretBinary), read with GetSecretValue (aws-sdk-go-v2) when an attempt
// executes.
//
// The worker's role needs secretsmanager:GetSecretValue on exactly the
// secrets its allowlist names (terraform/aws grants that from the same
// allowlist), and kms:Decrypt on a secret's key when it is not the AWS
// managed one. Errors carry the service's error code only: never the
// secret's name or value.
package awssecrets
