package envelope

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/sortie-run/sortie"
)

// Keyring maps key IDs to key-encryption keys. The primary key seals;
// Open picks the key named by the envelope's key ID, so a key kept in the
// ring after it stopped being primary still opens what it sealed. It is
// safe for concurrent use, and changes take effect for the next Seal or
// Open.
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
type Keyring struct {
	mu      sync.RWMutex
	keys    map[string]KEK
	primary string
}

// NewKeyring returns a ring holding kek as id, its primary key. Key IDs
// are 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'; a bad one
// is a [*sortie.ValidationError].
func NewKeyring(id string, kek KEK) (*Keyring, error) {
	r := &Keyring{keys: map[string]KEK{}}
	if err := r.Add(id, kek); err != nil {
		return nil, err
	}
	r.primary = id
	return r, nil
}

// Add adds kek as id. It does not change the primary key. An ID already
// in the ring, a bad ID or a nil kek is a [*sortie.ValidationError].
func (r *Keyring) Add(id string, kek KEK) error {
	if !keyIDPattern.MatchString(id) {
		return sortie.Invalidf("key_id", "%q must be 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'", id)
	}
	if kek == nil {
		return sortie.Invalidf("key_id", "key %q has no key-encryption key", id)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.keys[id]; dup {
		return sortie.Invalidf("key_id", "key %q is already in the keyring", id)
	}
	r.keys[id] = kek
	return nil
}

// SetPrimary makes key id the one Seal uses. An ID not in the ring wraps
// [ErrUnknownKey].
func (r *Keyring) SetPrimary(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[id]; !ok {
		return fmt.Errorf("set primary key: key ID %q is not in the keyring (it holds %s): %w", id, r.idsLocked(), ErrUnknownKey)
	}
	r.primary = id
	return nil
}

// Remove removes key id, after which its envelopes fail to open with
// [ErrUnknownKey]. Removing the primary key is a [*sortie.ValidationError]
// (make another key primary first); an ID not in the ring wraps
// [ErrUnknownKey].
func (r *Keyring) Remove(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[id]; !ok {
		return fmt.Errorf("remove key: key ID %q is not in the keyring (it holds %s): %w", id, r.idsLocked(), ErrUnknownKey)
	}
	if id == r.primary {
		return sortie.Invalidf("key_id", "key %q is the primary key; make another key primary before removing it", id)
	}
	delete(r.keys, id)
	return nil
}

// Primary returns the primary key's ID.
func (r *Keyring) Primary() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.primary
}

// IDs returns the IDs of the ring's keys, sorted.
func (r *Keyring) IDs() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.keys))
}

func (r *Keyring) idsLocked() string {
	ids := slices.Sorted(maps.Keys(r.keys))
	for i, id := range ids {
		ids[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(ids, ", ")
}

// primaryKey returns the primary key and its ID.
func (r *Keyring) primaryKey() (string, KEK) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.primary, r.keys[r.primary]
}

// lookup returns key id, or an error naming it that wraps ErrUnknownKey.
func (r *Keyring) lookup(id string) (KEK, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if k, ok := r.keys[id]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("open envelope: key ID %q is not in the keyring (it holds %s): %w", id, r.idsLocked(), ErrUnknownKey)
}
