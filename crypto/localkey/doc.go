// Package localkey is the development key-encryption key of package
// envelope: a [KEK] under a 32-byte AES-256 key kept in a file, the
// embedded default of the sortie CLI (a key file in its state directory).
//
// [LoadOrCreate] creates the file with mode 0600 on first use (atomically:
// concurrent processes all load the one key) and [Load] refuses a key file
// its group or others can read. Data keys are random and wrapped with
// AES-256-GCM in Tink's format (package crypto/internal/aesgcm), with the
// encryption context (encoded by [envelope.EncodeContext]) as associated
// data, so a data key only unwraps under the context it was made with.
//
// Use a key-management service ([github.com/sortie-run/sortie/crypto/awskms],
// [github.com/sortie-run/sortie/crypto/gcpkms]) in production: whoever can
// read the key file can open every envelope sealed under it.
package localkey
