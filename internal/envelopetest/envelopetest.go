// Package envelopetest gives tests an envelope configuration sealing under
// a local key, so no test needs a KMS to seal and open.
package envelopetest

import (
	"crypto/sha256"
	"testing"

	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
)

// Config returns an envelope configuration whose keyring holds one local
// key, keyID, made from keyID's SHA-256: the same ID gives the same key
// (a host and its worker in one test share it), another ID another key.
func Config(t testing.TB, keyID string) *envelope.Config {
	t.Helper()
	sum := sha256.Sum256([]byte(keyID))
	kek, err := localkey.New(sum[:localkey.KeyBytes])
	if err != nil {
		t.Fatal(err)
	}
	ring, err := envelope.NewKeyring(keyID, kek)
	if err != nil {
		t.Fatal(err)
	}
	return envelope.NewConfig(envelope.New(ring, nil))
}
