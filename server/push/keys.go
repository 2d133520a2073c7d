package push

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/sign"
)

// keyIDPattern is the rule of [sortie.PushConfig.KeyID].
var keyIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Keys are the host's webhook signing keys by key ID. A push
// configuration's KeyID picks one; an empty KeyID picks Primary.
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
	if err := k.validate(); err != nil {
		return Keys{}, err
	}
	return k, nil
}

// validate checks the key IDs, that every signer is set and that Primary
// is one of them.
func (k Keys) validate() error {
	if len(k.Signers) == 0 {
		return sortie.Invalidf("keys.signers", "at least one webhook signing key is required")
	}
	for _, id := range slices.Sorted(maps.Keys(k.Signers)) {
		if !keyIDPattern.MatchString(id) {
			return sortie.Invalidf("keys.signers", "key ID %.70q must be 1-63 characters of a-z, 0-9, '.', '_' or '-'", id)
		}
		if k.Signers[id] == nil {
			return sortie.Invalidf("keys.signers", "key %q has no signer", id)
		}
	}
	if _, ok := k.Signers[k.Primary]; !ok {
		return sortie.Invalidf("keys.primary", "%.70q is not one of the %d signing keys", k.Primary, len(k.Signers))
	}
	return nil
}

// signer returns the signer of key ID id, the primary one for "".
func (k Keys) signer(id string) (*sign.Signer, bool) {
	if id == "" {
		id = k.Primary
	}
	s, ok := k.Signers[id]
	return s, ok
}
