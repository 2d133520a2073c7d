package payload

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/payload/sealed"
)

// Keyring is the sealer of a host whose workers hold the same keyring
// (AWS or Cloud KMS): it seals their configuration and payload URLs and
// the payloads themselves. crypto/envelope's Config is the one.
type Keyring interface {
	sortie.Sealer
	sortie.ConfigSealer
	Sealer
	// SealPayloadURLs seals an attempt's URLs (sealed.URLs, JSON) bound
	// to inv's run and attempt.
	SealPayloadURLs(ctx context.Context, inv *sortie.Invocation, urls []byte) (json.RawMessage, error)
}

// URLMargin is how long an attempt's URLs outlive its deadline.
const URLMargin = 5 * time.Minute

// maxURLLife is the longest a presigned URL lives (S3's limit, 7 days).
const maxURLLife = 7 * 24 * time.Hour

// Granter is the engine's [sortie.Sealer] on a host whose workers reach
// the payload store only through presigned URLs (Lambda, Cloud Run):
// Seal seals the attempt's configuration with the keyring, then signs a
// GET URL for the run's variables (when the run keeps them in the store)
// and a PUT URL for the attempt's result object
// (sortie.ResultPayloadName), both expiring [URLMargin] after the
// attempt's deadline, and seals them into
// [sortie.Invocation.SealedPayloadURLs] for the attempt. The URLs never
// leave the process in the clear. The Store must seal with the same
// keyring, which the workers hold.
type Granter struct {
	Keyring
	store *Store
}

var (
	_ sortie.Sealer       = (*Granter)(nil)
	_ sortie.ConfigSealer = (*Granter)(nil)
	_ sortie.SealReserver = (*Granter)(nil)
)

// NewGranter returns the Granter of store, sealing with keyring.
func NewGranter(store *Store, keyring Keyring) *Granter {
	return &Granter{Keyring: keyring, store: store}
}

// SealReserveBytes implements [sortie.SealReserver]: the sealed URLs.
func (g *Granter) SealReserveBytes() int { return sortie.MaxSealedPayloadURLsBytes }

// Seal implements [sortie.Sealer].
func (g *Granter) Seal(ctx context.Context, inv *sortie.Invocation) error {
	if err := g.Keyring.Seal(ctx, inv); err != nil {
		return err
	}
	urls, err := g.store.SignURLs(ctx, inv, time.UnixMilli(inv.DeadlineMs).Add(URLMargin))
	if err != nil {
		return err
	}
	plain, err := json.Marshal(urls)
	if err != nil {
		return err
	}
	defer clear(plain)
	sealed, err := g.SealPayloadURLs(ctx, inv, plain)
	if err != nil {
		return err
	}
	if len(sealed) > sortie.MaxSealedPayloadURLsBytes {
		return fmt.Errorf("the payload URLs of run %s attempt %d are %d bytes sealed, over sortie.MaxSealedPayloadURLsBytes (%d)", inv.RunID, inv.Attempt, len(sealed), sortie.MaxSealedPayloadURLsBytes)
	}
	inv.SealedPayloadURLs = sealed
	return nil
}

// SignURLs signs inv's URLs, valid until expiry (at most 7 days from
// now): a GET URL for its variables when the store holds them, a PUT URL
// for its attempt's result object. A signing failure wraps
// [sortie.ErrUnavailable]; its error holds no URL.
func (s *Store) SignURLs(ctx context.Context, inv *sortie.Invocation, expiry time.Time) (*sealed.URLs, error) {
	life := min(max(time.Until(expiry), time.Minute), maxURLLife)
	urls := &sealed.URLs{Store: s.name, MaxPayloadBytes: s.limits.MaxPayloadBytes, Put: map[string]string{}}
	if ref := inv.VariablesRef; ref != nil && ref.Store == s.name {
		u, err := s.bucket.SignedURL(ctx, ref.Key, signOptions(http.MethodGet, life))
		if err != nil {
			return nil, s.wrap("sign a GET URL for", ref.Key, err)
		}
		urls.Get = map[string]string{ref.Key: u}
	}
	key := Key(inv.RunID, sortie.ResultPayloadName(inv.Attempt))
	u, err := s.bucket.SignedURL(ctx, key, signOptions(http.MethodPut, life))
	if err != nil {
		return nil, s.wrap("sign a PUT URL for", key, err)
	}
	urls.Put[key] = u
	return urls, nil
}
