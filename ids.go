package sortie

import (
	"crypto/rand"
	"regexp"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// RunID identifies a run. It is opaque to clients; Sortie makes it a ULID
// (26 characters, Crockford base32) so IDs sort by creation time.
type RunID string

// runIDEntropy makes the IDs of one process made in the same millisecond
// increase (by a random step), so they sort in the order they were made:
// concurrency queues admit runs in run ID order.
var runIDEntropy = &ulid.LockedMonotonicReader{MonotonicReader: ulid.Monotonic(rand.Reader, 0)}

// NewRunID returns a new run ID for the given creation time. IDs made by
// one process sort in the order they were made.
func NewRunID(t time.Time) RunID {
	return RunID(ulid.MustNew(ulid.Timestamp(t), runIDEntropy).String())
}

// NewLaunchID returns a new launch ID: an opaque string of 26 characters that
// identifies one launch of one attempt.
func NewLaunchID() string {
	return strings.ToLower(ulid.Make().String())
}

// Validate returns a [*ValidationError] for field "run_id" unless id is a
// well-formed ULID.
func (id RunID) Validate() error {
	if _, err := ulid.ParseStrict(string(id)); err != nil {
		return invalidf("run_id", "%.40q is not a run ID (a ULID: 26 characters of Crockford base32)", string(id))
	}
	return nil
}

// Canonical returns the ID as Sortie makes and stores it: upper case, since
// a ULID's letters are case-insensitive (Crockford base32) and a user may
// type them in lower case. An ID that is not valid is returned unchanged,
// for Validate to refuse.
func (id RunID) Canonical() RunID {
	if id.Validate() != nil {
		return id
	}
	return RunID(strings.ToUpper(string(id)))
}

// String returns the ID.
func (id RunID) String() string { return string(id) }

var (
	namePattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	runtimePattern = regexp.MustCompile(`^(go|exec):[a-z0-9][a-z0-9._-]{0,62}$`)
	launchPattern  = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
)

func checkName(field, v string) error {
	if !namePattern.MatchString(v) {
		return invalidf(field, "%.80q must be 1-63 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit", v)
	}
	return nil
}

func checkLaunchID(v string) error {
	if !launchPattern.MatchString(v) {
		return invalidf("launch_id", "%.140q must be 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'", v)
	}
	return nil
}
