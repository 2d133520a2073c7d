// Package gcpsecrets is the Google Cloud Secret Manager
// [functions.SecretSource] of configuration references ("gcp_secret" in a
// host's allowlist): a reference's value is its secret version's payload,
// read with AccessSecretVersion (cloud.google.com/go/secretmanager) when
// an attempt executes, its CRC32C checked. A reference naming a secret
// ("projects/P/secrets/S") reads its latest version.
//
// The worker's service account needs roles/secretmanager.secretAccessor
// on exactly the secrets its allowlist names (terraform/gcp grants that
// from the same allowlist). Errors carry the gRPC status code only: never
// the secret's name or value.
package gcpsecrets
