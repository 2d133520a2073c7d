package controlplane

import (
	"regexp"
	"time"

	"github.com/sortie-run/sortie"
)

// Defaults and limits drivers apply to their inputs.
const (
	// DefaultScope is the idempotency scope of a reservation that names none.
	DefaultScope = "default"
	// DefaultIdempotencyTTLMs is how long an idempotency record holds when a
	// reservation gives no TTL, in ms (24 h).
	DefaultIdempotencyTTLMs = int64(24 * time.Hour / time.Millisecond)
	// DefaultEventsLimit is the most events Events returns for limit ≤ 0.
	DefaultEventsLimit = 500
	// MaxEventsLimit caps the limit of one Events call.
	MaxEventsLimit = 1000
	// DefaultExpiredLimit is the most runs Expired returns for limit ≤ 0.
	DefaultExpiredLimit = 100
	// MaxExpiredLimit caps the limit of one Expired call.
	MaxExpiredLimit = 1000
	// MaxScopeBytes is the longest idempotency scope.
	MaxScopeBytes = 255
)

var launchIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// PrepareReservation checks r and returns a copy with its defaults filled
// in: Scope "default" and TTLMs 24 h when zero (r is not changed). It
// returns a [*sortie.ValidationError] naming the field for a missing run, a
// malformed run ID, agent or policy, an oversize idempotency key or scope,
// a malformed launch ID, or a negative TTL or time.
func PrepareReservation(in *sortie.Reservation) (*sortie.Reservation, error) {
	if in == nil || in.Run == nil {
		return nil, sortie.Invalidf("run", "missing: a reservation needs the run to store")
	}
	r := *in
	return &r, checkReservation(&r)
}

func checkReservation(r *sortie.Reservation) error {
	if err := r.Run.ID.Validate(); err != nil {
		return err
	}
	if err := r.Run.Agent.Validate(); err != nil {
		return err
	}
	if err := r.Run.Policy.Validate(); err != nil {
		return err
	}
	if n := len(r.Run.IdempotencyKey); n > sortie.MaxIdempotencyKeyBytes {
		return sortie.Invalidf("idempotency_key", "%d bytes, limit %d", n, sortie.MaxIdempotencyKeyBytes)
	}
	if len(r.Scope) > MaxScopeBytes {
		return sortie.Invalidf("scope", "%d bytes, limit %d", len(r.Scope), MaxScopeBytes)
	}
	if r.LaunchID != "" {
		if err := CheckLaunchID(r.LaunchID); err != nil {
			return err
		}
	}
	if err := checkRunConcurrency(r); err != nil {
		return err
	}
	if r.TTLMs < 0 || r.NowMs < 0 {
		return sortie.Invalidf("ttl_ms", "TTL %d ms and time %d ms must not be negative", r.TTLMs, r.NowMs)
	}
	if r.Scope == "" {
		r.Scope = DefaultScope
	}
	if r.TTLMs == 0 {
		r.TTLMs = DefaultIdempotencyTTLMs
	}
	return nil
}

// CheckLaunchID returns a [*sortie.ValidationError] for field "launch_id"
// unless id is 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'.
func CheckLaunchID(id string) error {
	if !launchIDPattern.MatchString(id) {
		return sortie.Invalidf("launch_id", "%.140q must be 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'", id)
	}
	return nil
}

// CheckAttempt checks the run ID, attempt number and launch ID that name
// one attempt, returning a [*sortie.ValidationError].
func CheckAttempt(id sortie.RunID, attempt int, launchID string) error {
	if err := id.Validate(); err != nil {
		return err
	}
	if attempt < 1 || attempt > 1000 {
		return sortie.Invalidf("attempt", "%d outside 1..1000", attempt)
	}
	return CheckLaunchID(launchID)
}

// EventsLimit returns the limit an Events call uses: [DefaultEventsLimit]
// for limit ≤ 0, at most [MaxEventsLimit].
func EventsLimit(limit int) int {
	if limit <= 0 {
		return DefaultEventsLimit
	}
	return min(limit, MaxEventsLimit)
}

// ExpiredLimit returns the limit an Expired call uses: [DefaultExpiredLimit]
// for limit ≤ 0, at most [MaxExpiredLimit].
func ExpiredLimit(limit int) int {
	if limit <= 0 {
		return DefaultExpiredLimit
	}
	return min(limit, MaxExpiredLimit)
}

// CheckCursor returns a [*sortie.ValidationError] for field "cursor" when
// the cursor is negative.
func CheckCursor(c sortie.Cursor) error {
	if c.Attempt < 0 || c.Seq < 0 {
		return sortie.Invalidf("cursor", "%s must not be negative", c)
	}
	return nil
}
