package sortie

import (
	"context"
	"net/url"
	"unicode/utf8"
)

// MaxPushConfigs is how many push configurations one run may have.
const MaxPushConfigs = 10

// PushConfig is a webhook a run's state changes are pushed to: an HTTPS
// (or, when the destination policy allows it, HTTP) URL. Deliveries are
// signed per Standard Webhooks with the host's webhook key KeyID; the
// configuration never holds a secret.
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
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return invalidf("url", "%q must be an absolute http(s) URL without user info", p.URL)
	}
	if p.KeyID != "" {
		return checkName("key_id", p.KeyID)
	}
	return nil
}

// PushStore is an optional interface of a [ControlPlane]: it keeps the push
// configurations of runs next to the runs, so they survive a host restart.
// Every driver in this module implements it; controlplanetest checks it.
type PushStore interface {
	// PutPushConfig stores cfg, replacing the one with the same run and
	// ID (its CreatedMs and Delivery are kept), and returns what is
	// stored. A new configuration of a terminal run whose terminal version
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
