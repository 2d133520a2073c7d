package payload

import (
	"context"
	"time"

	"github.com/sortie-run/sortie/payload/sealed"
)

// Keyring is the sealer of a host whose workers hold the same keyring:
// [sealed.Keyring].
type Keyring = sealed.Keyring

// Granter is the engine's sortie.Sealer on a host whose workers reach
// the payload store only through presigned URLs: [sealed.Granter], which
// holds the grant rule (which objects an attempt may read and write).
type Granter = sealed.Granter

var _ sealed.URLSigner = (*Store)(nil)

// NewGranter returns the Granter of store, sealing with keyring.
func NewGranter(store *Store, keyring Keyring) *Granter {
	return sealed.NewGranter(store, keyring)
}

// SignURL implements [sealed.URLSigner] with the bucket's SignedURL
// (signOptions: V4 on Cloud Storage). A signing failure wraps
// sortie.ErrUnavailable; its error holds no URL.
func (s *Store) SignURL(ctx context.Context, method, key string, life time.Duration) (string, error) {
	u, err := s.bucket.SignedURL(ctx, key, signOptions(method, life))
	if err != nil {
		return "", s.wrap("sign a "+method+" URL for", key, err)
	}
	return u, nil
}
