package controlplane

import (
	"regexp"
	"unicode/utf8"

	"github.com/sortie-run/sortie"
)

// MaxPendingPushLimit is the largest limit of a PendingPushConfigs call.
const MaxPendingPushLimit = 1000

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
