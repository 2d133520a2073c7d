package push

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/keyring"
	"github.com/sortie-run/sortie/crypto/sign"
)

// keyIDPattern is the rule of [sortie.PushConfig.KeyID].
var keyIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Keys are the host's webhook signing keys by key ID. A push
// configuration's KeyID picks one; an empty KeyID picks Primary. The
// dispatcher holds them in a [keyring.Ring], whose rules they follow.
type Keys struct {
	// Primary is the ID of the key that signs for configurations without a
	// KeyID. Required; must be a key of Signers.
	Primary string
	// Signers maps key IDs (1-63 characters of a-z, 0-9, '.', '_' or '-')
	// to their signers. A signer holding several secrets (a rotation)
	// signs every message with each of them. Required; at least one.
	Signers map[string]*sign.Signer
}

// SecretKeys returns [Keys] built from Standard Webhooks secrets
// ("whsec_" + base64, see [sign.ParseSecret]): secrets maps each key ID to
// its secrets, several during a rotation. Errors are
// [*sortie.ValidationError]s that never show a secret.
func SecretKeys(primary string, secrets map[string][]string) (Keys, error) {
	k := Keys{Primary: primary, Signers: make(map[string]*sign.Signer, len(secrets))}
	for _, id := range slices.Sorted(maps.Keys(secrets)) {
		s, err := sign.NewSigner(secrets[id]...)
		if err != nil {
			return Keys{}, fmt.Errorf("push: webhook key %q: %w", id, err)
		}
		k.Signers[id] = s
	}
	if _, err := k.ring(); err != nil {
		return Keys{}, err
	}
	return k, nil
}

// signerRule is the rule of the webhook signing keys: IDs as
// [sortie.PushConfig.KeyID] allows them, and no nil signer.
var signerRule = &keyring.Rule[*sign.Signer]{
	Kind:   "webhook signing key",
	ID:     keyIDPattern,
	IDText: "1-63 characters of a-z, 0-9, '.', '_' or '-'",
	Field:  "keys.signers",
	Check: func(id string, s *sign.Signer) error {
		if s == nil {
			return sortie.Invalidf("keys.signers", "key %q has no signer", id)
		}
		return nil
	},
}

// ring checks k and returns its signers as a [keyring.Ring] whose primary
// is Primary.
func (k Keys) ring() (*keyring.Ring[*sign.Signer], error) {
	if len(k.Signers) == 0 {
		return nil, sortie.Invalidf("keys.signers", "at least one webhook signing key is required")
	}
	if _, ok := k.Signers[k.Primary]; !ok {
		return nil, sortie.Invalidf("keys.primary", "%.70q is not one of the %d signing keys", k.Primary, len(k.Signers))
	}
	r, err := keyring.New(signerRule, k.Primary, k.Signers[k.Primary])
	for _, id := range slices.Sorted(maps.Keys(k.Signers)) {
		if err == nil && id != k.Primary {
			err = r.Add(id, k.Signers[id])
		}
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// signer returns the signer of key ID id, the primary one for ""; an ID
// not held wraps [keyring.ErrUnknownKey].
func (d *Dispatcher) signer(id string) (*sign.Signer, error) {
	if id == "" {
		_, s := d.keys.PrimaryKey()
		return s, nil
	}
	return d.keys.Key(id)
}

// HasKey reports whether the dispatcher signs with the key ID ("" names
// the primary key), so a configuration naming an unknown key can be
// refused when it is set instead of failing at its first delivery.
func (d *Dispatcher) HasKey(id string) bool {
	return id == "" || d.keys.Has(id)
}
