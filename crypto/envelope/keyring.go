package envelope

import (
	"fmt"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/keyring"
)

// Keyring maps key IDs to key-encryption keys: a [keyring.Ring], with its
// rules for unknown IDs and removal. The primary key seals; Open picks the
// key named by the envelope's key ID, so a key kept in the ring after it
// stopped being primary still opens what it sealed. It is safe for
// concurrent use, and changes take effect for the next Seal or Open.
//
// Rotation, one step at a time (each is a call on a live ring, or a new
// ring at the next deploy):
//
//  1. [Keyring.Add] the new key, on every worker and host; seals still
//     use the old primary. (A worker without it cannot open what a host
//     seals under it later: [ErrUnknownKey], naming the key.)
//  2. [Keyring.SetPrimary] to the new key: new envelopes name it, and
//     envelopes of the old key still open.
//  3. Keep the old key until no run that may still open one of its
//     envelopes is left: every run sealed before step 2 is terminal (the
//     engine keeps a run's configuration sealed at rest and re-seals it
//     for each attempt with the primary key, so a retry or resume after
//     step 2 uses the new key, but the stored copy names the old one).
//  4. [Keyring.Remove] the old key; its envelopes then fail with
//     [ErrUnknownKey], naming it. Removing it early strands the runs whose
//     copy at rest it sealed: their next launch cannot re-seal.
type Keyring = keyring.Ring[KEK]

// kekRule is the rule of a [Keyring]: key IDs as the envelope format
// allows them, and no nil key.
var kekRule = &keyring.Rule[KEK]{
	Kind:   "key-encryption key",
	ID:     keyIDPattern,
	IDText: "1-128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-', starting with a letter or digit",
	Check: func(id string, kek KEK) error {
		if kek == nil {
			return sortie.Invalidf("key_id", "key %q has no key-encryption key", id)
		}
		return nil
	},
}

// NewKeyring returns a ring holding kek as id, its primary key. Key IDs
// are 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-', starting
// with a letter or digit; a bad one, or a nil kek, is a
// [*sortie.ValidationError].
func NewKeyring(id string, kek KEK) (*Keyring, error) {
	return keyring.New(kekRule, id, kek)
}

// KeyringOf returns the ring of pairs (key ID, key reference such as a KMS
// key ARN or a Cloud KMS key name), the first primary, each KEK made by
// open from its reference; nil for no pairs. An error of open or of the
// ring (a bad or repeated key ID: a [*sortie.ValidationError]) is
// returned naming the key ID.
func KeyringOf(pairs [][2]string, open func(ref string) (KEK, error)) (*Keyring, error) {
	var ring *Keyring
	for _, p := range pairs {
		kek, err := open(p[1])
		if err == nil && ring == nil {
			ring, err = NewKeyring(p[0], kek)
		} else if err == nil {
			err = ring.Add(p[0], kek)
		}
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", p[0], err)
		}
	}
	return ring, nil
}
