package sealed

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/sortie-run/sortie"
)

// URLSigner is a payload store that signs presigned URLs of its objects:
// package payload's Store (gocloud.dev/blob's SignedURL, on a host) or
// package payload/s3presign's Signer (the SDK's Signature Version 4
// signer alone, in the Lambda function, which links no S3 client).
type URLSigner interface {
	// Name is the store's name, as references carry it ("s3://BUCKET").
	Name() string
	// Limits are the store's limits, defaults applied.
	Limits() sortie.PayloadLimits
	// SignURL returns a URL that lets its bearer do method (GET or PUT;
	// DELETE for a [Deleter]) on the object key for life (a minute to 7
	// days). A failure wraps
	// sortie.ErrUnavailable when a retry may cure it; no error holds a
	// URL.
	SignURL(ctx context.Context, method, key string, life time.Duration) (string, error)
}

// Keyring is the sealer of a host whose workers hold the same keyring
// (AWS or Cloud KMS): it seals their configuration and payload URLs and
// the payloads themselves. crypto/envelope's Config is the one.
type Keyring interface {
	sortie.Sealer
	sortie.ConfigSealer
	Sealer
	// SealPayloadURLs seals an attempt's URLs ([EncodeURLs]) bound to
	// inv's run and attempt.
	SealPayloadURLs(ctx context.Context, inv *sortie.Invocation, urls []byte) (json.RawMessage, error)
}

// URLMargin is how long an attempt's URLs outlive its deadline.
const URLMargin = 5 * time.Minute

// maxURLLife is the longest a presigned URL lives (S3's limit, 7 days).
const maxURLLife = 7 * 24 * time.Hour

// Granter is the engine's [sortie.Sealer] on a host whose workers reach
// the payload store only through presigned URLs (Lambda, Cloud Run), and
// in the Lambda reconciler function that relaunches their attempts: Seal
// seals the attempt's configuration with the keyring, then grants it the
// URLs of [Grant] (expiring [URLMargin] after the attempt's deadline) and
// seals them, compressed ([EncodeURLs]), into
// [sortie.Invocation.SealedPayloadURLs]. The URLs never leave the process
// in the clear. The store's objects are sealed with
// the same keyring, which the workers hold.
type Granter struct {
	Keyring
	signer URLSigner
}

var (
	_ sortie.Sealer       = (*Granter)(nil)
	_ sortie.ConfigSealer = (*Granter)(nil)
	_ sortie.SealReserver = (*Granter)(nil)
)

// NewGranter returns the Granter of the store signer signs for, sealing
// with keyring.
func NewGranter(signer URLSigner, keyring Keyring) *Granter {
	return &Granter{Keyring: keyring, signer: signer}
}

// SealReserveBytes implements [sortie.SealReserver]: the sealed URLs.
func (g *Granter) SealReserveBytes() int { return sortie.MaxSealedPayloadURLsBytes }

// Seal implements [sortie.Sealer].
func (g *Granter) Seal(ctx context.Context, inv *sortie.Invocation) error {
	if err := g.Keyring.Seal(ctx, inv); err != nil {
		return err
	}
	urls, err := Grant(ctx, g.signer, inv, time.UnixMilli(inv.DeadlineMs).Add(URLMargin))
	if err != nil {
		return err
	}
	sealed, err := g.sealURLs(ctx, inv, urls)
	if err != nil {
		return err
	}
	inv.SealedPayloadURLs = sealed
	return nil
}

// Grant returns the URLs the attempt of inv is granted in the store s
// signs for, valid until expiry (a minute to 7 days from now): a GET URL
// for each payload of inv that store holds (its variables, a resumed
// attempt's input and checkpoint, and the results of its recorded steps
// kept by reference, [sortie.Invocation.StepResultRefs]), a PUT URL for
// each object the attempt may write: its result
// ([sortie.ResultPayloadName]) and its interrupt's checkpoint
// ([sortie.CheckpointPayloadName]), and PUT URLs of its
// [sortie.MaxStepSlots] step slots ([sortie.StepSlotPayloadName]);
// nothing else. [Granter.Seal] trims the slots, the last first, until the
// sealed URLs fit [sortie.MaxSealedPayloadURLsBytes]. Errors are the
// signer's.
func Grant(ctx context.Context, s URLSigner, inv *sortie.Invocation, expiry time.Time) (*URLs, error) {
	life := min(max(time.Until(expiry), time.Minute), maxURLLife)
	urls := &URLs{Store: s.Name(), MaxPayloadBytes: s.Limits().MaxPayloadBytes, Get: map[string]string{}, Put: map[string]string{}}
	for _, ref := range append(inv.PayloadRefs(), inv.StepResultRefs()...) {
		if ref.Store == urls.Store {
			if err := sign(ctx, s, urls.Get, http.MethodGet, ref.Key, life); err != nil {
				return nil, err
			}
		}
	}
	names := []string{sortie.ResultPayloadName(inv.Attempt), sortie.CheckpointPayloadName(inv.Attempt)}
	for k := range sortie.MaxStepSlots {
		names = append(names, sortie.StepSlotPayloadName(inv.Attempt, k))
	}
	for _, name := range names {
		if err := sign(ctx, s, urls.Put, http.MethodPut, Key(inv.RunID, name), life); err != nil {
			return nil, err
		}
	}
	return urls, nil
}

// sign puts into m the URL s signs for method on key, valid for life.
func sign(ctx context.Context, s URLSigner, m map[string]string, method, key string, life time.Duration) error {
	u, err := s.SignURL(ctx, method, key, life)
	if err != nil {
		return err
	}
	m[key] = u
	return nil
}
