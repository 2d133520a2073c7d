// Package secretstores serves the two secret stores configuration
// references read, on loopback, for tests: [StartAWS] is an HTTP server
// speaking the AWS Secrets Manager JSON 1.1 protocol (GetSecretValue,
// SigV4-signed requests required), [StartGCP] an in-process gRPC Secret
// Manager (AccessSecretVersion, with the payload's CRC32C). Each records
// the secret names it was asked for, so a test can tell that a value was
// read when, and only when, an attempt executed.
package secretstores
