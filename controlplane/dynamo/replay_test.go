package dynamo_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/sortie-run/sortie/crypto/sign"
)

var _ sign.StoreReplayCache = (*dynamo.ReplayCache)(nil)

// The table's replay cache is shared by every handle: of many concurrent
// calls with one ID through several handles exactly one is first; an ID
// is seen until its expiry (on the handle's clock) and free after it; a
// put applied whose answer was lost is the call's own, not a replay.
func TestReplayCacheShared(t *testing.T) {
	_, table := newTable(t)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	caches := []sign.StoreReplayCache{}
	for range 3 {
		caches = append(caches, open(t, newClient(), table, nil).ReplayCache("callback"))
	}
	var first atomic.Int32
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen, err := caches[i%3].SeenContext(t.Context(), "msg_a", now.Add(time.Minute))
			if err != nil {
				t.Errorf("SeenContext = %v", err)
			}
			if !seen {
				first.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := first.Load(); n != 1 {
		t.Errorf("30 concurrent SeenContext(msg_a) over 3 handles: %d not seen, want exactly 1", n)
	}
	clocked := open(t, newClient(), table, &dynamo.Options{Now: clock}).ReplayCache("callback")
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if seen, err := clocked.SeenContext(t.Context(), "msg_a", now.Add(time.Minute)); seen || err != nil {
		t.Errorf("SeenContext(msg_a) at its expiry = %v, %v, want not seen (expired counts as absent)", seen, err)
	}
	if seen, _ := clocked.SeenContext(t.Context(), "msg_a", now.Add(time.Minute)); !seen {
		t.Errorf("SeenContext(msg_a) again = not seen, want seen")
	}
	if seen, _ := clocked.SeenContext(t.Context(), "msg_a", now.Add(time.Minute)); !seen {
		t.Errorf("SeenContext(msg_a) a third time = not seen, want seen")
	}
	f := &faultAPI{Client: newClient(), stripItem: true, fail: func(n int) string { return map[bool]string{true: "after"}[n == 1] }}
	lossy := open(t, f, table, nil).ReplayCache("callback")
	if seen, err := lossy.SeenContext(t.Context(), "msg_b", now.Add(time.Minute)); seen || err != nil || f.faults["after"] != 1 {
		t.Errorf("SeenContext(msg_b) whose put was applied and its answer lost (no item in the lost condition) = %v, %v (faults %v), want not seen",
			seen, err, f.faults)
	}
}
