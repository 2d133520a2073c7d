package sortie

import (
	"context"
	"regexp"
	"strings"
	"time"
)

// Defaults of [PayloadLimits].
const (
	// DefaultMaxPayloadBytes is the largest single payload a
	// [PayloadStore] keeps by default (100 MiB).
	DefaultMaxPayloadBytes = 100 << 20
	// DefaultMaxRunPayloadBytes is the most payload bytes one run keeps in
	// a [PayloadStore] by default, all its payloads together (256 MiB).
	DefaultMaxRunPayloadBytes = 256 << 20
)

// PayloadRef names a payload kept in a [PayloadStore] instead of inline
// on the run: the run keeps this, never the value.
type PayloadRef struct {
	// Store names the store that holds it, for example "file" or
	// "s3://bucket" (no credentials, no local path).
	Store string `json:"store"`
	// Key is the object's key: "runs/RUN_ID/NAME".
	Key string `json:"key"`
	// Size is the value's size in bytes (before sealing).
	Size int64 `json:"size"`
	// SHA256 is the hex SHA-256 of the stored (sealed) object, checked
	// on every read before the object is opened.
	SHA256 string `json:"sha256"`
}

var (
	payloadKeyPattern = regexp.MustCompile(`^runs/[0-9A-Z]{26}/[a-z0-9][a-z0-9._-]{0,63}$`)
	sha256Pattern     = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Validate checks the reference's fields and returns a
// [*ValidationError] naming field.
func (r *PayloadRef) Validate(field string) error {
	switch {
	case r.Store == "" || len(r.Store) > 256:
		return invalidf(field+".store", "must be 1-256 bytes")
	case !payloadKeyPattern.MatchString(r.Key):
		return invalidf(field+".key", "%.80q must be runs/RUN_ID/NAME", r.Key)
	case r.Size < 0 || r.Size > 1<<30:
		return invalidf(field+".size", "%d outside 0..%d", r.Size, 1<<30)
	case !sha256Pattern.MatchString(r.SHA256):
		return invalidf(field+".sha256", "must be 64 lowercase hex digits")
	}
	return nil
}

// PayloadStoreKind returns the kind of store a [PayloadRef.Store] names,
// which prices its requests: "s3" for "s3://BUCKET", "gs" for
// "gs://BUCKET", "file" for the embedded store ("file", or a "file://"
// URL), and "" for any other scheme.
func PayloadStoreKind(store string) string {
	scheme, _, found := strings.Cut(store, "://")
	switch {
	case !found && store == "file":
		return "file"
	case found && (scheme == "s3" || scheme == "gs" || scheme == "file"):
		return scheme
	}
	return ""
}

// PayloadLimits are a [PayloadStore]'s limits, in bytes.
type PayloadLimits struct {
	// MaxPayloadBytes is the largest single payload (a run's variables,
	// one result). Optional; defaults to [DefaultMaxPayloadBytes].
	MaxPayloadBytes int64
	// MaxRunBytes is the most bytes one run's payloads take together.
	// Optional; defaults to [DefaultMaxRunPayloadBytes].
	MaxRunBytes int64
	// MaxPayloadSetting and MaxRunSetting name where each limit is set,
	// for refusals to name it (a host's "--max-payload-bytes, env
	// SORTIE_MAX_PAYLOAD_BYTES"). Optional; refusals then name the payload
	// store's limit only.
	MaxPayloadSetting, MaxRunSetting string
}

// PayloadSetting is what a refusal adds to the per-payload limit it
// names: " (SETTING)", or "" without MaxPayloadSetting.
func (l PayloadLimits) PayloadSetting() string { return parenthesized(l.MaxPayloadSetting) }

// RunSetting is PayloadSetting for the per-run limit.
func (l PayloadLimits) RunSetting() string { return parenthesized(l.MaxRunSetting) }

func parenthesized(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// WithDefaults returns l with every zero field set to its default.
func (l PayloadLimits) WithDefaults() PayloadLimits {
	if l.MaxPayloadBytes == 0 {
		l.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if l.MaxRunBytes == 0 {
		l.MaxRunBytes = DefaultMaxRunPayloadBytes
	}
	return l
}

// PayloadStore keeps the payloads of runs that are over their inline
// limits (variables over [MaxVariablesBytes], results over
// [MaxResultBytes]) in object storage, sealed, and returns them. The
// payload package's Store is the one implementation.
type PayloadStore interface {
	// Put seals value (at most Limits().MaxPayloadBytes) bound to run,
	// its agent and the object's key "runs/RUN/NAME", stores it, and
	// returns its reference. A value over the limit is a
	// [*ValidationError] naming field; a store failure wraps
	// [ErrUnavailable] when a retry may cure it.
	Put(ctx context.Context, run RunID, agent, name, field string, value []byte) (*PayloadRef, error)
	// Get returns the value ref names, stored for run and agent. An
	// object whose size or SHA-256 is not ref's, or that does not open
	// for run, agent and key, or that is missing, is
	// [ErrPayloadIntegrity], the error naming its key and SHA-256.
	Get(ctx context.Context, run RunID, agent string, ref *PayloadRef) ([]byte, error)
	// DeleteRun deletes every object of run; none is success.
	DeleteRun(ctx context.Context, run RunID) error
	// Sweep deletes the objects of the runs created before createdBefore
	// (the time in the run ID) for which keep reports false (runs the
	// control plane does not hold: a submission that failed after
	// storing its variables, a run deleted or expired), and returns how
	// many runs it swept.
	Sweep(ctx context.Context, keep func(context.Context, RunID) (bool, error), createdBefore time.Time) (int, error)
	// Limits returns the store's limits, defaults applied.
	Limits() PayloadLimits
}
