package aesgcm_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/tink-crypto/tink-go/v2/aead/subtle"

	"github.com/sortie-run/sortie/crypto/internal/aesgcm"
)

// TestWireFormatIsTinks seals with each of this package and Tink's
// AES-GCM (no prefix) and opens with the other, for both key sizes:
// envelopes and key files written before the switch still open.
func TestWireFormatIsTinks(t *testing.T) {
	for _, size := range []int{16, 32} {
		key := make([]byte, size)
		rand.Read(key)
		ours, err := aesgcm.New(key)
		if err != nil {
			t.Fatalf("New(%d-byte key) = %v", size, err)
		}
		tink, err := subtle.NewAESGCM(key)
		if err != nil {
			t.Fatalf("subtle.NewAESGCM = %v", err)
		}
		pt, ad := []byte("the data key"), []byte("sortie.envelope/v1 binding")
		ct := ours.Seal(pt, ad)
		if len(ct) != aesgcm.NonceBytes+len(pt)+aesgcm.TagBytes {
			t.Errorf("Seal = %d bytes, want nonce + %d + tag", len(ct), len(pt))
		}
		if got, err := tink.Decrypt(ct, ad); err != nil || !bytes.Equal(got, pt) {
			t.Errorf("Tink's Decrypt(our Seal) = %q, %v, want %q", got, err, pt)
		}
		tct, err := tink.Encrypt(pt, ad)
		if err != nil {
			t.Fatalf("Tink's Encrypt = %v", err)
		}
		if got, err := ours.Open(tct, ad); err != nil || !bytes.Equal(got, pt) {
			t.Errorf("Open(Tink's Encrypt) = %q, %v, want %q", got, err, pt)
		}
	}
}

func TestOpenRefusesWhatDoesNotAuthenticate(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	a, err := aesgcm.New(key)
	if err != nil {
		t.Fatal(err)
	}
	ct := a.Seal([]byte("secret"), []byte("ad"))
	flipped := bytes.Clone(ct)
	flipped[len(flipped)-1] ^= 1
	for name, tc := range map[string]struct{ ct, ad []byte }{
		"a flipped tag bit": {flipped, []byte("ad")},
		"other ad":          {ct, []byte("other")},
		"too short":         {ct[:aesgcm.NonceBytes+aesgcm.TagBytes-1], []byte("ad")},
		"empty":             {nil, []byte("ad")},
	} {
		if _, err := a.Open(tc.ct, tc.ad); !errors.Is(err, aesgcm.ErrOpen) {
			t.Errorf("Open(%s) = %v, want ErrOpen", name, err)
		}
	}
	if _, err := aesgcm.New(make([]byte, 24)); err == nil {
		t.Error("New(24-byte key) = nil error, want a refusal (16 or 32 bytes)")
	}
}
