// Package gcpkms is the Google Cloud KMS key-encryption key of package
// envelope: a [KEK] over cloud.google.com/go/kms/apiv1. Cloud KMS has no
// GenerateDataKey, so the data key is random (crypto/rand) and wrapped
// with Encrypt; the envelope's encryption context (purpose and agent; run
// ID and attempt too when the data-key cache is off), encoded by
// envelope.EncodeContext, is the additional authenticated data of Encrypt
// and Decrypt, so a wrapped key only unwraps under its context. Requests
// and responses carry CRC32C checksums, verified both ways.
//
// It is a small adapter instead of tink-go-gcpkms, which breaks plain
// `go mod tidy` next to cloud.google.com/go/run (see DESIGN.md's
// dependency notes). [KEK.Requests] counts the requests made.
package gcpkms
