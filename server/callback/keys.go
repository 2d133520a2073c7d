package callback

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/keyring"
	"github.com/sortie-run/sortie/crypto/sign"
)

// KeyBytes is the size of a callback key made by [NewKey], in bytes.
const KeyBytes = 32

// maxKeys bounds the keys a [Keyring] holds.
const maxKeys = 16

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Key is one host key for callback credentials: an ID, named in every
// token it issues, and a secret of at least 32 bytes. Its String and
// GoString name the ID only, so a key printed by mistake shows no secret.
type Key struct {
	ID     string
	secret []byte
}

// NewKey returns a key with id (1-64 of A-Z, a-z, 0-9, '_', '-') and a
// secret of [KeyBytes] from crypto/rand.
func NewKey(id string) (Key, error) {
	if !keyIDPattern.MatchString(id) {
		return Key{}, sortie.Invalidf("key_id", "%.64q must be 1-64 characters of A-Z, a-z, 0-9, '_' or '-'", id)
	}
	b := make([]byte, KeyBytes)
	if _, err := rand.Read(b); err != nil {
		return Key{}, fmt.Errorf("callback: new key %s: %w", id, err)
	}
	return Key{ID: id, secret: b}, nil
}

// ParseKey parses the text form "ID:whsec_BASE64" of [Key.Encode] (the
// secret as crypto/sign's [sign.ParseSecret] reads it, at least 32 bytes).
// Errors are [*sortie.ValidationError]s that never show the secret.
func ParseKey(s string) (Key, error) {
	id, secret, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || !keyIDPattern.MatchString(id) {
		return Key{}, sortie.Invalidf("key_id", "a callback key is ID:whsec_BASE64 with an ID of 1-64 characters of A-Z, a-z, 0-9, '_' or '-'")
	}
	b, err := sign.ParseSecret(secret)
	if err != nil {
		return Key{}, fmt.Errorf("callback key %s: %w", id, err)
	}
	if len(b) < KeyBytes {
		return Key{}, sortie.Invalidf("secret", "callback key %s has %d bytes, want at least %d", id, len(b), KeyBytes)
	}
	return Key{ID: id, secret: b}, nil
}

// Encode returns the key's text form, "ID:whsec_BASE64", which holds the
// secret: store it as a secret.
func (k Key) Encode() string {
	return k.ID + ":" + sign.SecretPrefix + base64.StdEncoding.EncodeToString(k.secret)
}

// String names the key without its secret.
func (k Key) String() string { return "callback key " + k.ID }

// GoString names the key without its secret.
func (k Key) GoString() string { return "callback.Key{ID: " + fmt.Sprintf("%q", k.ID) + "}" }

// Keyring holds the host's callback keys: the primary issues new tokens,
// and every key verifies them, so tokens issued before a rotation keep
// working until their key is removed. It follows the rules of
// [keyring.Ring] (unknown key IDs wrap [keyring.ErrUnknownKey]; the
// primary cannot be removed). It is safe for concurrent use.
type Keyring struct {
	ring *keyring.Ring[[]byte]
}

// secretRule is the rule of a callback [Keyring]: IDs as [NewKey] makes
// them, secrets of at least [KeyBytes], at most 16 keys.
var secretRule = &keyring.Rule[[]byte]{
	Kind:    "callback key",
	ID:      keyIDPattern,
	IDText:  "1-64 characters of A-Z, a-z, 0-9, '_' or '-'",
	MaxKeys: maxKeys,
	Check: func(id string, secret []byte) error {
		if len(secret) < KeyBytes {
			return sortie.Invalidf("key", "callback key %s: make keys with NewKey or ParseKey", id)
		}
		return nil
	},
}

// NewKeyring returns a keyring whose primary is primary, also holding
// others (for verifying only). It returns a [*sortie.ValidationError] for
// a key without a secret, a repeated ID, or more than 16 keys.
func NewKeyring(primary Key, others ...Key) (*Keyring, error) {
	ring, err := keyring.New(secretRule, primary.ID, slices.Clone(primary.secret))
	if err != nil {
		return nil, err
	}
	r := &Keyring{ring: ring}
	for _, k := range others {
		if err := r.Add(k); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// ParseKeyring parses keys in the text form of [ParseKey], separated by
// commas or white space; the first is the primary.
func ParseKeyring(s string) (*Keyring, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' })
	if len(fields) == 0 {
		return nil, sortie.Invalidf("keys", "at least one callback key is required")
	}
	keys := make([]Key, len(fields))
	for i, f := range fields {
		k, err := ParseKey(f)
		if err != nil {
			return nil, fmt.Errorf("keyring entry %d: %w", i+1, err)
		}
		keys[i] = k
	}
	return NewKeyring(keys[0], keys[1:]...)
}

// Add adds k for verifying. It returns a [*sortie.ValidationError] for a
// key without a secret of at least 32 bytes, an ID already held, or a
// seventeenth key.
func (r *Keyring) Add(k Key) error { return r.ring.Add(k.ID, slices.Clone(k.secret)) }

// SetPrimary makes the key with id the one that issues new tokens. An ID
// not held wraps [keyring.ErrUnknownKey].
func (r *Keyring) SetPrimary(id string) error { return r.ring.SetPrimary(id) }

// Remove drops the key with id: tokens it issued no longer verify. An ID
// not held wraps [keyring.ErrUnknownKey]; the primary is a
// [*sortie.ValidationError] (set another primary first).
func (r *Keyring) Remove(id string) error { return r.ring.Remove(id) }

// Primary returns the ID of the key that issues new tokens.
func (r *Keyring) Primary() string { return r.ring.Primary() }

// IDs returns the IDs of every key held, sorted.
func (r *Keyring) IDs() []string { return r.ring.IDs() }
