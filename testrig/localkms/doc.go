// Package localkms builds and runs local-kms (the AWS KMS emulator pinned
// in tools/localkms/go.mod) for the tests of the crypto packages.
//
// A test package's TestMain returns [Main]; its tests call [Shared], which
// builds the binary (cached by the Go build cache) and starts one server
// with a fresh data directory seeded with [KeyA] and [KeyB] the first time,
// and the server is stopped when the tests end. A build or start failure
// fails the test with a message saying what to check.
package localkms
