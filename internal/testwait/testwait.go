// Package testwait is the one poll loop Sortie's tests use to wait on a
// condition with a deadline, instead of sleeping.
package testwait

import (
	"testing"
	"time"
)

// Interval is how often Until checks its condition.
const Interval = 10 * time.Millisecond

// Until checks cond every [Interval] until it holds, and fails tb naming
// what it waited for when timeout passes first.
func Until(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	UntilReport(tb, what, timeout, func() (bool, string) { return cond(), "" })
}

// UntilReport is [Until] with a condition that also describes what it saw
// (for example the run's state); the last description is in the failure.
func UntilReport(tb testing.TB, what string, timeout time.Duration, cond func() (ok bool, seen string)) {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		ok, seen := cond()
		if ok {
			return
		}
		select {
		case <-deadline.C:
			if seen != "" {
				tb.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, seen)
			}
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}
