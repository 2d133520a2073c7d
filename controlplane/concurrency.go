package controlplane

import (
	"unicode/utf8"

	"github.com/sortie-run/sortie"
)

// SlotState is what a run holds of its concurrency key before a change:
// a place in its queue or a slot (see [sortie.Run.Queued] and
// [sortie.Run.HoldsSlot]).
type SlotState struct{ queued, held bool }

// SlotStateOf returns r's slot state; take it before applying a change.
func SlotStateOf(r *sortie.Run) SlotState {
	return SlotState{queued: r.Queued(), held: r.HoldsSlot()}
}

// SlotChange is what one write of a run does to its concurrency key's
// counts, which the driver applies in the same atomic write as the run.
type SlotChange struct {
	// Key is the run's concurrency key; empty when the write changes none.
	Key string
	// Acquire: the run leaves its queue and takes a slot; the write MUST
	// be conditional on fewer than Limit runs of Key holding slots, and
	// fail with sortie.ErrConcurrencyLimit otherwise.
	Acquire bool
	// Dequeue: the run leaves its queue without a slot (it ended queued).
	Dequeue bool
	// Release: the run gives its slot back (it ended).
	Release bool
	Limit   int
}

// Changes reports whether the write changes any count.
func (c SlotChange) Changes() bool { return c.Acquire || c.Dequeue || c.Release }

// SlotChangeOf returns what the write of after, whose stored version had
// state before, does to its key's counts.
func SlotChangeOf(before SlotState, after *sortie.Run) SlotChange {
	if after.Concurrency == nil {
		return SlotChange{}
	}
	now := SlotStateOf(after)
	c := SlotChange{Key: after.Concurrency.Key, Limit: after.Concurrency.Limit}
	switch {
	case before.queued && now.held:
		c.Acquire = true
	case before.queued && !now.queued:
		c.Dequeue = true
	case before.held && !now.held:
		c.Release = true
	}
	return c
}

// checkRunConcurrency checks a reservation's concurrency key: a run with
// one is reserved queued, so its first launch is an admission
// (RecordLaunch), never part of the reservation.
func checkRunConcurrency(r *sortie.Reservation) error {
	c := r.Run.Concurrency
	if c == nil {
		return nil
	}
	if len(c.Key) == 0 || len(c.Key) > 64+sortie.MaxConcurrencyKeyBytes || !utf8.ValidString(c.Key) {
		return sortie.Invalidf("concurrency.key", "%d bytes: must be 1 to %d bytes of UTF-8", len(c.Key), 64+sortie.MaxConcurrencyKeyBytes)
	}
	if c.Limit < 1 || c.Limit > sortie.MaxConcurrencyLimit {
		return sortie.Invalidf("concurrency.limit", "%d outside 1..%d", c.Limit, sortie.MaxConcurrencyLimit)
	}
	if r.LaunchID != "" {
		return sortie.Invalidf("launch_id", "a run with a concurrency key is reserved queued; its first launch is admitted by RecordLaunch")
	}
	return nil
}
