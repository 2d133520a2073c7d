// Package aesgcm is the one AES-GCM AEAD of Sortie's crypto packages: the
// Go standard library's (crypto/cipher, a FIPS 140-3 module) with a random
// 12-byte nonce per message and a 16-byte tag. Its output, nonce ||
// ciphertext || tag, is the wire format of Tink's AES-GCM without prefix
// (tink-go aead/subtle.AESGCM), so what either sealed the other opens; it
// is used instead of Tink's wrapper because that wrapper links Tink's key
// registry and the protobuf runtime (1.5 MB of the Lambda bootstrap).
package aesgcm

import (
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
)

// Sizes of the output, in bytes.
const (
	NonceBytes = 12
	TagBytes   = 16
)

// ErrOpen is what Open returns for a ciphertext that does not
// authenticate: tampered with, sealed under another key or with other
// associated data, or too short.
var ErrOpen = errors.New("aesgcm: message authentication failed")

// AEAD seals and opens messages under one key. It is safe for concurrent
// use.
type AEAD struct {
	gcm cipher.AEAD
}

// New returns the AEAD of key, which must be 16 or 32 bytes (AES-128 or
// AES-256); it keeps no reference to key.
func New(key []byte) (*AEAD, error) {
	if len(key) != 16 && len(key) != 32 {
		return nil, fmt.Errorf("aesgcm: key is %d bytes, want 16 or 32", len(key))
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aesgcm: %w", err)
	}
	gcm, err := cipher.NewGCMWithRandomNonce(b)
	if err != nil {
		return nil, fmt.Errorf("aesgcm: %w", err)
	}
	return &AEAD{gcm: gcm}, nil
}

// Seal returns a random nonce, plaintext encrypted and the tag
// authenticating it with ad.
func (a *AEAD) Seal(plaintext, ad []byte) []byte {
	return a.gcm.Seal(nil, nil, plaintext, ad)
}

// Open returns the plaintext of ct sealed with ad, or [ErrOpen].
func (a *AEAD) Open(ct, ad []byte) ([]byte, error) {
	if len(ct) < NonceBytes+TagBytes {
		return nil, ErrOpen
	}
	pt, err := a.gcm.Open(nil, nil, ct, ad)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}
