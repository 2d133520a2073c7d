package envelope

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/internal/aesgcm"
)

// Sizes of the data-key layer's AES-256-GCM output (Tink's format, no
// prefix).
const (
	ivBytes  = aesgcm.NonceBytes
	tagBytes = aesgcm.TagBytes
)

// Options configures a [Keeper]. A nil *Options means the defaults.
type Options struct {
	// Cache turns on the data-key cache: a data key generated for one
	// purpose and agent seals several runs, and an unwrapped one opens
	// several envelopes, within the cache's bounds. Run ID and attempt are
	// then bound in the associated data only, not in the key-management
	// context. Optional; defaults to no cache: every Seal and Open calls
	// the key-management service, with run ID and attempt in its context.
	Cache *CacheOptions
	// Now is the cache's clock. Optional; defaults to time.Now.
	Now func() time.Time
}

// Stats counts a Keeper's calls of key-management services.
type Stats struct {
	// GenerateDataKey and Decrypt count the calls made of each.
	GenerateDataKey int64
	Decrypt         int64
	// CacheHits counts data keys served by the cache instead.
	CacheHits int64
}

// KMSRequests returns the calls made of key-management services.
func (s Stats) KMSRequests() int64 { return s.GenerateDataKey + s.Decrypt }

// Keeper seals and opens envelopes with the keys of a [Keyring]. It is
// safe for concurrent use.
type Keeper struct {
	ring  *Keyring
	cache *cache

	generated, decrypted, hits atomic.Int64
}

// New returns a Keeper over ring. opts may be nil.
func New(ring *Keyring, opts *Options) *Keeper {
	k := &Keeper{ring: ring}
	if opts != nil && opts.Cache != nil {
		now := opts.Now
		if now == nil {
			now = time.Now
		}
		k.cache = newCache(*opts.Cache, now)
	}
	return k
}

// Ring returns the keeper's keyring; changes to it (rotation) apply to
// the next Seal and Open.
func (k *Keeper) Ring() *Keyring { return k.ring }

// Stats returns the calls made so far.
func (k *Keeper) Stats() Stats {
	return Stats{GenerateDataKey: k.generated.Load(), Decrypt: k.decrypted.Load(), CacheHits: k.hits.Load()}
}

// Purge zeroes and drops every cached data key.
func (k *Keeper) Purge() {
	if k.cache != nil {
		k.cache.purge()
	}
}

// Seal encrypts plaintext (at most [MaxPlaintextBytes]) under a data key
// wrapped by the keyring's primary key, bound to b, and returns the
// envelope (JSON). A bad binding or plaintext is a
// [*sortie.ValidationError]; a key-management failure is returned wrapped
// (sortie.ErrUnavailable when a retry may cure it). Neither the plaintext
// nor the data key appears in any error.
func (k *Keeper) Seal(ctx context.Context, plaintext []byte, b Binding) ([]byte, error) {
	sealed, _, err := k.seal(ctx, plaintext, b)
	return sealed, err
}

func (k *Keeper) seal(ctx context.Context, plaintext []byte, b Binding) ([]byte, int, error) {
	if len(plaintext) > MaxPlaintextBytes {
		return nil, 0, sortie.Invalidf("plaintext", "%d bytes, limit %d", len(plaintext), MaxPlaintextBytes)
	}
	e, calls, err := k.sealParts(ctx, plaintext, b)
	if err != nil {
		return nil, calls, err
	}
	out, err := json.Marshal(e)
	if err != nil {
		return nil, calls, fmt.Errorf("seal: encode envelope: %w", err)
	}
	return out, calls, nil
}

// sealParts encrypts plaintext bound to b under a data key of the
// keyring's primary key and returns the envelope's fields.
func (k *Keeper) sealParts(ctx context.Context, plaintext []byte, b Binding) (*envelope, int, error) {
	if err := b.Validate(); err != nil {
		return nil, 0, err
	}
	kid, kek := k.ring.PrimaryKey()
	ec := kmsContext(b, k.cache != nil)
	key, wrapped, calls, err := k.dataKey(ctx, kid, kek, ec)
	sortie.AddKMSRequests(ctx, calls)
	if err != nil {
		return nil, calls, err
	}
	defer clear(key)
	ct, err := encrypt(key, plaintext, associatedData(kid, ec, b))
	if err != nil {
		return nil, calls, err
	}
	return &envelope{V: FormatVersion, KID: kid, Ctx: ec, DK: wrapped, CT: ct}, calls, nil
}

// dataKey returns a data key for sealing with kid under ec: a cached one,
// or a new one from the key-management service (calls is then 1).
func (k *Keeper) dataKey(ctx context.Context, kid string, kek KEK, ec map[string]string) (key, wrapped []byte, calls int, err error) {
	if k.cache != nil {
		if key, wrapped, ok := k.cache.sealKey(kid, ec); ok {
			k.hits.Add(1)
			return key, wrapped, 0, nil
		}
	}
	k.generated.Add(1)
	key, wrapped, err = kek.GenerateDataKey(ctx, ec)
	if err != nil {
		return nil, nil, 1, fmt.Errorf("seal: generate a data key with key %q, context keys %s: %w", kid, contextKeys(ec), err)
	}
	if len(key) != DataKeyBytes || len(wrapped) == 0 || len(wrapped) > maxWrappedBytes {
		clear(key)
		return nil, nil, 1, fmt.Errorf("seal: key %q returned a %d-byte data key wrapped in %d bytes, want %d wrapped in 1-%d",
			kid, len(key), len(wrapped), DataKeyBytes, maxWrappedBytes)
	}
	if k.cache != nil {
		k.cache.putSealKey(kid, ec, key, wrapped)
	}
	return key, wrapped, 1, nil
}

// Open checks and decrypts an envelope that Seal made with binding b and
// returns the plaintext. It never panics on any input. Errors wrap
// [ErrMalformed], [ErrUnknownKey] (naming the key ID), [ErrBinding] or
// [ErrAuth], or carry the key-management service's error
// (sortie.ErrUnavailable when a retry may cure it); none contains
// plaintext or key material.
func (k *Keeper) Open(ctx context.Context, sealed []byte, b Binding) ([]byte, error) {
	pt, _, err := k.open(ctx, sealed, b)
	return pt, err
}

// open is Open that also returns the key-management calls it made.
func (k *Keeper) open(ctx context.Context, sealed []byte, b Binding) ([]byte, int, error) {
	if err := b.Validate(); err != nil {
		return nil, 0, err
	}
	e, err := decode(sealed)
	if err != nil {
		return nil, 0, err
	}
	return k.openParts(ctx, e, b)
}

// openParts checks a decoded envelope against b and decrypts it.
func (k *Keeper) openParts(ctx context.Context, e *envelope, b Binding) ([]byte, int, error) {
	if err := checkContext(e.KID, e.Ctx, b); err != nil {
		return nil, 0, err
	}
	kek, err := k.ring.Key(e.KID)
	if err != nil {
		return nil, 0, fmt.Errorf("open envelope: %w", err)
	}
	key, calls, err := k.unwrap(ctx, e, kek)
	sortie.AddKMSRequests(ctx, calls)
	if err != nil {
		return nil, calls, err
	}
	defer clear(key)
	pt, err := decrypt(key, e.CT, associatedData(e.KID, e.Ctx, b))
	return pt, calls, err
}

// unwrap returns the envelope's data key: cached, or unwrapped by the
// key-management service (calls is then 1).
func (k *Keeper) unwrap(ctx context.Context, e *envelope, kek KEK) ([]byte, int, error) {
	if k.cache != nil {
		if key, ok := k.cache.openKey(e.KID, e.DK, e.Ctx); ok {
			k.hits.Add(1)
			return key, 0, nil
		}
	}
	k.decrypted.Add(1)
	key, err := kek.Decrypt(ctx, e.DK, e.Ctx)
	if err != nil {
		return nil, 1, fmt.Errorf("open envelope: unwrap its data key with key %q, context keys %s: %w", e.KID, contextKeys(e.Ctx), err)
	}
	if len(key) != DataKeyBytes {
		clear(key)
		return nil, 1, fmt.Errorf("open envelope: key %q unwrapped a %d-byte data key, want %d: %w", e.KID, len(key), DataKeyBytes, ErrAuth)
	}
	if k.cache != nil {
		k.cache.putOpenKey(e.KID, e.DK, e.Ctx, key)
	}
	return key, 1, nil
}

// encrypt seals plaintext with AES-256-GCM under key (package
// crypto/internal/aesgcm): a random 12-byte IV, then the ciphertext and
// its 16-byte tag.
func encrypt(key, plaintext, ad []byte) ([]byte, error) {
	a, err := aesgcm.New(key)
	if err != nil {
		return nil, fmt.Errorf("seal: data-key cipher: %w", err)
	}
	return a.Seal(plaintext, ad), nil
}

func decrypt(key, ct, ad []byte) ([]byte, error) {
	a, err := aesgcm.New(key)
	if err != nil {
		return nil, fmt.Errorf("open envelope: data-key cipher: %w", err)
	}
	pt, err := a.Open(ct, ad)
	if err != nil {
		return nil, fmt.Errorf("open envelope: tampered with, or bound to another run, attempt, invocation version or key: %w", ErrAuth)
	}
	return pt, nil
}
