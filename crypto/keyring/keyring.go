package keyring

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sortie-run/sortie"
)

// ErrUnknownKey is wrapped by every error about a key ID the ring does not
// hold; the error names that ID and the IDs held.
var ErrUnknownKey = errors.New("key ID not in the keyring")

// Rule is what the rings of one kind of key accept.
type Rule[K any] struct {
	// Kind names the keys in errors, e.g. "callback key". Required.
	Kind string
	// ID matches the key IDs of the kind. Required.
	ID *regexp.Regexp
	// IDText says in errors what ID matches, e.g. "1-64 characters of
	// A-Z, a-z, 0-9, '_' or '-'". Required.
	IDText string
	// Field is the field validation errors about a key name. Optional;
	// defaults to "key_id".
	Field string
	// MaxKeys is the most keys a ring holds. Optional; 0 means no limit.
	MaxKeys int
	// Check refuses a key value (nil, too short) with a
	// [*sortie.ValidationError] that never shows the key. Optional.
	Check func(id string, key K) error
}

func (r *Rule[K]) field() string {
	if r.Field == "" {
		return "key_id"
	}
	return r.Field
}

// Ring holds keys of one kind by key ID, one of them primary. It is safe
// for concurrent use; a change takes effect for the next call.
type Ring[K any] struct {
	rule    *Rule[K]
	mu      sync.RWMutex
	keys    map[string]K
	primary string
}

// New returns a ring of rule's kind holding key as id, its primary. It
// returns a [*sortie.ValidationError] for a bad id or a key rule.Check
// refuses. rule must not change afterwards.
func New[K any](rule *Rule[K], id string, key K) (*Ring[K], error) {
	r := &Ring[K]{rule: rule, keys: map[string]K{}}
	if err := r.Add(id, key); err != nil {
		return nil, err
	}
	r.primary = id
	return r, nil
}

// Add adds key as id, for verifying or opening; the primary stays. It
// returns a [*sortie.ValidationError] for a bad id, a key the rule's Check
// refuses, an id already held, or a key over the rule's MaxKeys.
func (r *Ring[K]) Add(id string, key K) error {
	if !r.rule.ID.MatchString(id) {
		return sortie.Invalidf(r.rule.field(), "%s ID %.128q must be %s", r.rule.Kind, id, r.rule.IDText)
	}
	if r.rule.Check != nil {
		if err := r.rule.Check(id, key); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.keys[id]; dup {
		return sortie.Invalidf(r.rule.field(), "%s %q is already in the keyring", r.rule.Kind, id)
	}
	if r.rule.MaxKeys > 0 && len(r.keys) >= r.rule.MaxKeys {
		return sortie.Invalidf("keys", "%d %ss, limit %d", len(r.keys)+1, r.rule.Kind, r.rule.MaxKeys)
	}
	r.keys[id] = key
	return nil
}

// SetPrimary makes key id the one that signs or seals. An id not held
// wraps [ErrUnknownKey].
func (r *Ring[K]) SetPrimary(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[id]; !ok {
		return fmt.Errorf("set primary key: %w", r.unknownLocked(id))
	}
	r.primary = id
	return nil
}

// Remove removes key id: what it signed or sealed no longer verifies or
// opens. An id not held wraps [ErrUnknownKey]; the primary is a
// [*sortie.ValidationError] (make another key primary first).
func (r *Ring[K]) Remove(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[id]; !ok {
		return fmt.Errorf("remove key: %w", r.unknownLocked(id))
	}
	if id == r.primary {
		return sortie.Invalidf(r.rule.field(), "%s %q is the primary key; make another key primary before removing it", r.rule.Kind, id)
	}
	delete(r.keys, id)
	return nil
}

// Primary returns the primary key's ID.
func (r *Ring[K]) Primary() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.primary
}

// PrimaryKey returns the primary key and its ID.
func (r *Ring[K]) PrimaryKey() (string, K) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.primary, r.keys[r.primary]
}

// Key returns key id. An id not held is an error naming it and the IDs
// held that wraps [ErrUnknownKey].
func (r *Ring[K]) Key(id string) (K, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.keys[id]
	if !ok {
		return k, r.unknownLocked(id)
	}
	return k, nil
}

// Has reports whether the ring holds key id.
func (r *Ring[K]) Has(id string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.keys[id]
	return ok
}

// IDs returns the IDs of the keys held, sorted.
func (r *Ring[K]) IDs() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.keys))
}

// unknownLocked is the error for an id the ring does not hold.
func (r *Ring[K]) unknownLocked(id string) error {
	held := slices.Sorted(maps.Keys(r.keys))
	for i, h := range held {
		held[i] = fmt.Sprintf("%q", h)
	}
	return fmt.Errorf("key ID %.128q is not in the keyring (it holds %s): %w", id, strings.Join(held, ", "), ErrUnknownKey)
}
