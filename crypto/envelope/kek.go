package envelope

import (
	"context"
	"encoding/binary"
	"slices"
)

// DataKeyBytes is the size of a data key: AES-256.
const DataKeyBytes = 32

// KEK is a key-encryption key held by a key-management service (AWS KMS,
// Google Cloud KMS) or, for development, a local key file. It makes and
// unwraps data keys; it never sees the configuration a data key seals.
//
// The encryption context ec is bound to the wrapped key: Decrypt with any
// other context MUST fail. AWS KMS sends it as the EncryptionContext (so it
// shows in audit logs and key policies can require it); Google Cloud KMS and
// the local key bind it as additional authenticated data, encoded with
// [EncodeContext].
//
// Errors that a retry may cure (throttling, a network failure) wrap
// sortie.ErrUnavailable.
type KEK interface {
	// GenerateDataKey returns a fresh random data key of [DataKeyBytes]
	// bytes, in plaintext and wrapped under the KEK with ec.
	GenerateDataKey(ctx context.Context, ec map[string]string) (plaintext, wrapped []byte, err error)
	// Decrypt unwraps a data key that GenerateDataKey wrapped with the
	// same ec.
	Decrypt(ctx context.Context, wrapped []byte, ec map[string]string) (plaintext []byte, err error)
}

// EncodeContext encodes an encryption context canonically: the keys in
// byte order, each key and value preceded by its length as a 4-byte
// big-endian integer. Equal maps encode equal, and no two maps share an
// encoding.
func EncodeContext(ec map[string]string) []byte {
	keys := make([]string, 0, len(ec))
	for k := range ec {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b []byte
	for _, k := range keys {
		b = appendField(b, k)
		b = appendField(b, ec[k])
	}
	return b
}

// appendField appends s preceded by its length (4 bytes, big-endian).
func appendField(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}
