package controlplane

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/sortie-run/sortie"
)

// Page sizes of [sortie.PushStore.PendingPushConfigs].
const (
	// DefaultPendingPushLimit is the page size a caller without a reason
	// for another uses (the push dispatcher's default sweep page).
	DefaultPendingPushLimit = 100
	// MaxPendingPushLimit is the largest limit of a PendingPushConfigs call.
	MaxPendingPushLimit = 1000
)

// MaxPushErrorBytes is the longest PushDelivery.LastError, bytes.
const MaxPushErrorBytes = 256

var pushIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// CheckPushConfig validates a configuration and the time given to
// PutPushConfig, returning a [*sortie.ValidationError] (field
// "push_config" when cfg is nil, "now_ms" when nowMs is negative).
func CheckPushConfig(cfg *sortie.PushConfig, nowMs int64) error {
	if cfg == nil {
		return sortie.Invalidf("push_config", "required")
	}
	if nowMs < 0 {
		return sortie.Invalidf("now_ms", "%d must not be negative", nowMs)
	}
	return cfg.Validate()
}

// CheckPushKey validates the run ID and configuration ID that name one
// push configuration, returning a [*sortie.ValidationError].
func CheckPushKey(run sortie.RunID, id string) error {
	if err := run.Validate(); err != nil {
		return err
	}
	if !pushIDPattern.MatchString(id) {
		return sortie.Invalidf("id", "%.70q must be 1-63 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// CheckPushCount returns a [*sortie.ValidationError] for field
// "push_configs" when a run would have n > [sortie.MaxPushConfigs]
// configurations.
func CheckPushCount(n int) error {
	if n > sortie.MaxPushConfigs {
		return sortie.Invalidf("push_configs", "a run has at most %d push configurations", sortie.MaxPushConfigs)
	}
	return nil
}

// CheckPushDelivery validates delivery progress given to
// UpdatePushDelivery: no negative number, LastError valid UTF-8 of at most
// [MaxPushErrorBytes] bytes. It returns a [*sortie.ValidationError].
func CheckPushDelivery(d sortie.PushDelivery) error {
	if d.DeliveredVersion < 0 || d.Failures < 0 || d.NextAttemptMs < 0 {
		return sortie.Invalidf("delivery", "delivered_version %d, failures %d and next_attempt_ms %d must not be negative",
			d.DeliveredVersion, d.Failures, d.NextAttemptMs)
	}
	if len(d.LastError) > MaxPushErrorBytes || !utf8.ValidString(d.LastError) {
		return sortie.Invalidf("delivery.last_error", "must be valid UTF-8 of at most %d bytes, got %d", MaxPushErrorBytes, len(d.LastError))
	}
	return nil
}

// CheckPendingLimit returns a [*sortie.ValidationError] for field "limit"
// outside 1..[MaxPendingPushLimit].
func CheckPendingLimit(limit int) error {
	if limit < 1 || limit > MaxPendingPushLimit {
		return sortie.Invalidf("limit", "%d outside 1..%d", limit, MaxPendingPushLimit)
	}
	return nil
}

// PushPosition is the position a page of PendingPushConfigs continues
// from: the last configuration of the previous page. Pending
// configurations are ordered by NextAttemptMs, then run ID, then ID (see
// [ComparePushPositions]). Its text form (see [PushPosition.Encode]) is
// opaque to callers.
type PushPosition struct {
	// NextAttemptMs is the configuration's NextAttemptMs, Unix ms.
	NextAttemptMs int64 `json:"next_attempt_ms"`
	// RunID is the configuration's run.
	RunID sortie.RunID `json:"push_run_id"`
	// ID is the configuration's ID.
	ID string `json:"push_id"`
}

// PushPositionOf returns the position of cfg.
func PushPositionOf(cfg *sortie.PushConfig) PushPosition {
	return PushPosition{NextAttemptMs: cfg.Delivery.NextAttemptMs, RunID: cfg.RunID, ID: cfg.ID}
}

// ComparePushPositions orders positions by NextAttemptMs, then RunID,
// then ID: -1 when a comes first, 0 when equal, +1 otherwise.
func ComparePushPositions(a, b PushPosition) int {
	return cmp.Or(cmp.Compare(a.NextAttemptMs, b.NextAttemptMs), cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.ID, b.ID))
}

// Encode returns the position's opaque text form: base64url (no padding)
// of a small JSON object.
func (p PushPosition) Encode() string {
	b, _ := json.Marshal(p) // three plain fields always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodePushPosition parses a position made by [PushPosition.Encode]. It
// returns nil and no error for the empty string (the first page), and a
// [*sortie.ValidationError] for field "page_token" (which matches
// sortie.ErrInvalidArgument) for anything else that is not such a
// position, a List page token included.
func DecodePushPosition(s string) (*PushPosition, error) {
	return decodePosition(s, "PendingPushConfigs", func(p *PushPosition) bool {
		return p.NextAttemptMs >= 0 && p.RunID.Validate() == nil && pushIDPattern.MatchString(p.ID)
	})
}

// CheckPushLease validates the arguments of LeasePushDelivery, returning
// a [*sortie.ValidationError].
func CheckPushLease(run sortie.RunID, id, owner string, nowMs, untilMs int64) error {
	if err := CheckPushKey(run, id); err != nil {
		return err
	}
	if owner == "" || len(owner) > 128 || !utf8.ValidString(owner) {
		return sortie.Invalidf("owner", "must be valid UTF-8 of 1-128 bytes, got %d", len(owner))
	}
	if nowMs < 0 || untilMs <= nowMs {
		return sortie.Invalidf("until_ms", "%d must be after now_ms %d (not negative)", untilMs, nowMs)
	}
	return nil
}

// PushLeaseFree reports whether owner may take a delivery lease held by
// holder until heldUntilMs ("" for none) at nowMs: none, ended, or its own.
func PushLeaseFree(owner, holder string, heldUntilMs, nowMs int64) bool {
	return holder == "" || heldUntilMs <= nowMs || holder == owner
}

// PushLeaseConflict is the error of a refused LeasePushDelivery: the
// configuration is done, or holder's lease runs until heldUntilMs.
func PushLeaseConflict(run sortie.RunID, id string, done bool, holder string, heldUntilMs int64) error {
	if done {
		return fmt.Errorf("lease push config %s of run %s: it is done: %w", id, run, sortie.ErrConflict)
	}
	return fmt.Errorf("lease push config %s of run %s: %q holds the lease until %d: %w", id, run, holder, heldUntilMs, sortie.ErrConflict)
}
