package sortie

import (
	"context"
	"encoding/json"
	"unicode/utf8"
)

// MaxPushConfigs is how many push configurations one run may have.
const MaxPushConfigs = 10

// MaxSealedTokenBytes is the largest [PushConfig.SealedToken], in bytes.
const MaxSealedTokenBytes = 4 << 10

// Message formats of [PushConfig.Format].
const (
	// PushFormatSortie is the host's run payload (package server/push:
	// {"type": "sortie.run.updated", ..., "data": {"run": ...}}). An empty
	// Format means it too.
	PushFormatSortie = "sortie"
	// PushFormatA2A is the A2A push notification body: a StreamResponse
	// holding the run as an A2A task, as the host's A2A GetTask returns it
	// (package server/a2a).
	PushFormatA2A = "a2a"
)

// PushConfig is a webhook a run's state changes are pushed to: an HTTPS
// (or, when the destination policy allows it, HTTP) URL. Deliveries are
// signed per Standard Webhooks with the host's webhook key KeyID. The
// configuration never holds a plaintext secret: a token the receiver asked
// for is kept sealed by the host (SealedToken).
type PushConfig struct {
	// RunID is the run whose changes are pushed.
	RunID RunID `json:"run_id"`
	// ID names the configuration within the run: 1-63 characters of a-z,
	// 0-9, '.', '_' or '-'.
	ID string `json:"id"`
	// URL receives a POST per change; absolute http(s), at most 2,048 bytes.
	URL string `json:"url"`
	// KeyID names the host's webhook signing key. Optional; the host's
	// primary key when empty.
	KeyID string `json:"key_id,omitempty"`
	// Format is the message format: "" or [PushFormatSortie] for the
	// host's run payload, [PushFormatA2A] for the A2A task. Optional;
	// defaults to "" (the run payload). A host without a renderer of the
	// format ends the configuration at its first delivery.
	Format string `json:"format,omitempty"`
	// SealedToken is the token the receiver asked to get with every
	// delivery (A2A's push notification token), envelope-sealed by the
	// host and bound to RunID and ID; never plaintext. It is opaque to the
	// control plane, which stores and returns it byte for byte. Optional;
	// JSON of at most [MaxSealedTokenBytes] bytes.
	SealedToken json.RawMessage `json:"sealed_token,omitempty"`
	// CreatedMs is when the configuration was first stored, Unix ms; set by
	// the control plane.
	CreatedMs int64 `json:"created_ms,omitempty"`
	// Delivery is the delivery progress; kept by the control plane across
	// replacements of the configuration.
	Delivery PushDelivery `json:"delivery,omitzero"`
}

// PushDelivery is a push configuration's delivery progress.
type PushDelivery struct {
	// DeliveredVersion is the highest run version delivered; it never
	// decreases.
	DeliveredVersion int64 `json:"delivered_version,omitempty"`
	// Failures counts consecutive failed deliveries since the last success.
	Failures int `json:"failures,omitempty"`
	// NextAttemptMs is when the next delivery may be tried, Unix ms; 0 for
	// at once.
	NextAttemptMs int64 `json:"next_attempt_ms,omitempty"`
	// LastError is the last failure (status or transport error, never the
	// body), at most 256 bytes.
	LastError string `json:"last_error,omitempty"`
	// Done is set once the run's terminal version was delivered or
	// delivery gave up; a done configuration is no longer pending.
	Done bool `json:"done,omitempty"`
}

// Validate checks the fields a client sets and returns a [*ValidationError].
func (p *PushConfig) Validate() error {
	if err := p.RunID.Validate(); err != nil {
		return err
	}
	if err := checkName("id", p.ID); err != nil {
		return err
	}
	if len(p.URL) > 2048 || !utf8.ValidString(p.URL) {
		return invalidf("url", "must be valid UTF-8 of at most 2048 bytes, got %d", len(p.URL))
	}
	if err := CheckHTTPURL("url", p.URL); err != nil {
		return err
	}
	if p.KeyID != "" {
		if err := checkName("key_id", p.KeyID); err != nil {
			return err
		}
	}
	switch p.Format {
	case "", PushFormatSortie, PushFormatA2A:
	default:
		return invalidf("format", "%.70q is not a push message format (want %q or %q; empty for %q)",
			p.Format, PushFormatSortie, PushFormatA2A, PushFormatSortie)
	}
	if len(p.SealedToken) > MaxSealedTokenBytes {
		return invalidf("sealed_token", "%d bytes, limit %d", len(p.SealedToken), MaxSealedTokenBytes)
	}
	if len(p.SealedToken) > 0 && !json.Valid(p.SealedToken) {
		return invalidf("sealed_token", "must be JSON (a sealed envelope)")
	}
	return nil
}

// PushStore is the push part of every [ControlPlane]: it keeps the push
// configurations of runs next to the runs, so they survive a host restart.
// It is named on its own for code that needs only it (the push dispatcher,
// the A2A handler); controlplanetest checks it for every driver.
type PushStore interface {
	// PutPushConfig stores cfg, replacing the one with the same run and
	// ID (URL, KeyID, Format and SealedToken are replaced, an empty one
	// clearing the stored one; CreatedMs and Delivery are kept), and
	// returns what is stored. A new configuration of a terminal run whose terminal version
	// is not yet delivered is pending like any other. Errors:
	// ErrInvalidArgument ([*ValidationError]) for a bad field or more than
	// [MaxPushConfigs] for the run; ErrNotFound for an unknown run.
	PutPushConfig(ctx context.Context, cfg *PushConfig, nowMs int64) (*PushConfig, error)
	// GetPushConfig returns one configuration; ErrNotFound when the run or
	// the configuration does not exist.
	GetPushConfig(ctx context.Context, run RunID, id string) (*PushConfig, error)
	// ListPushConfigs returns the run's configurations ordered by ID
	// (none is not an error); ErrNotFound for an unknown run.
	ListPushConfigs(ctx context.Context, run RunID) ([]PushConfig, error)
	// DeletePushConfig removes one configuration; ErrNotFound when it does
	// not exist.
	DeletePushConfig(ctx context.Context, run RunID, id string) error
	// UpdatePushDelivery records delivery progress of one configuration.
	// DeliveredVersion is kept at the maximum of the stored and the given
	// value. ErrNotFound when the configuration was deleted meanwhile.
	UpdatePushDelivery(ctx context.Context, run RunID, id string, d PushDelivery) error
	// LeasePushDelivery takes the delivery lease of one configuration for
	// owner (1-128 bytes naming a host) until untilMs (Unix ms, after
	// nowMs), so that of the hosts sharing the store one delivers each
	// version: it succeeds when the configuration is not Done and holds
	// no lease, one that ended at or before nowMs, or owner's own (which
	// it renews, or ends with untilMs = nowMs + 1), and returns the
	// configuration as stored (compare its progress with the run before
	// delivering). Recording progress does not end the lease: the owner
	// goes on delivering the run's next versions, and a retried record
	// cannot end another owner's lease. DeletePushConfig ends it.
	// Errors: ErrConflict when the configuration is Done or
	// another owner's lease is live, ErrNotFound for an unknown one,
	// ErrInvalidArgument for a bad argument.
	LeasePushDelivery(ctx context.Context, run RunID, id, owner string, nowMs, untilMs int64) (*PushConfig, error)
	// PendingPushConfigs returns a page of up to limit (1..1000)
	// configurations that are not Done and whose NextAttemptMs is at most
	// nowMs, and the opaque token of the next page: "" after the last
	// page. pageToken is "" for the first page, else a token a previous
	// call returned (nowMs may differ between the calls). Pages follow a
	// stable order (this module's drivers: NextAttemptMs first, then run ID
	// and ID; DynamoDB's push index order), so a walk from the first page
	// to the last returns exactly once every configuration pending
	// throughout whose delivery progress is not updated meanwhile; one
	// added, updated (delivered, retried later, Done) or deleted meanwhile
	// may be returned twice or left out. A page may hold fewer than limit
	// configurations and still have a next page. The dispatcher compares
	// each with its run to decide what to deliver. Errors:
	// ErrInvalidArgument ([*ValidationError]) naming "limit", or
	// "page_token" for a token this store did not make.
	PendingPushConfigs(ctx context.Context, nowMs int64, limit int, pageToken string) (cfgs []PushConfig, next string, err error)
}
