package sign

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// ReplayCache remembers the IDs of accepted messages.
type ReplayCache interface {
	// Seen records id until expiry and reports whether it was already
	// recorded with an expiry still ahead. It must be safe for concurrent
	// use, and atomic: of two concurrent calls with one id, one sees it.
	Seen(id string, expiry time.Time) bool
}

// StoreReplayCache is a [ReplayCache] kept in a store that may fail (a
// database shared by several verifiers): [Verifier.VerifyContext] calls
// SeenContext instead of Seen, and refuses the message with
// [ErrReplayCache] when it fails.
type StoreReplayCache interface {
	ReplayCache
	// SeenContext is Seen with a context and the store's error.
	SeenContext(ctx context.Context, id string, expiry time.Time) (bool, error)
}

// MemoryReplayCacheOptions configures a [MemoryReplayCache]. A nil
// *MemoryReplayCacheOptions means the defaults.
type MemoryReplayCacheOptions struct {
	// MaxEntries bounds the IDs held. When full, the ID closest to its
	// expiry is forgotten first, which reopens a replay window for it
	// only: size the cache for the peak message rate times the tolerance.
	// Optional; defaults to 100,000.
	MaxEntries int
	// Now is the clock. Optional; defaults to time.Now.
	Now func() time.Time
}

// MemoryReplayCache is a [ReplayCache] in this process's memory, bounded
// in size. Use a shared store when several processes verify one stream of
// messages.
type MemoryReplayCache struct {
	max int
	now func() time.Time

	mu  sync.Mutex
	ids map[string]time.Time
	exp expiries
}

// NewMemoryReplayCache returns an empty cache. opts may be nil.
func NewMemoryReplayCache(opts *MemoryReplayCacheOptions) *MemoryReplayCache {
	c := &MemoryReplayCache{max: 100_000, now: time.Now, ids: map[string]time.Time{}}
	if opts != nil {
		if opts.MaxEntries > 0 {
			c.max = opts.MaxEntries
		}
		if opts.Now != nil {
			c.now = opts.Now
		}
	}
	return c
}

// Seen implements [ReplayCache].
func (c *MemoryReplayCache) Seen(id string, expiry time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for len(c.exp) > 0 && !c.exp[0].at.After(now) {
		c.pop()
	}
	if at, ok := c.ids[id]; ok && at.After(now) {
		return true
	}
	for len(c.ids) >= c.max && len(c.exp) > 0 {
		c.pop()
	}
	c.ids[id] = expiry
	heap.Push(&c.exp, expiry1{id: id, at: expiry})
	return false
}

// Forget implements [Forgetter]: id is accepted again.
func (c *MemoryReplayCache) Forget(_ context.Context, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ids, id)
	return nil
}

// Len returns the number of IDs held.
func (c *MemoryReplayCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids)
}

// pop forgets the ID with the earliest expiry; a heap entry left from an
// earlier recording of a re-recorded ID is dropped alone.
func (c *MemoryReplayCache) pop() {
	e := heap.Pop(&c.exp).(expiry1)
	if at, ok := c.ids[e.id]; ok && at.Equal(e.at) {
		delete(c.ids, e.id)
	}
}

type expiry1 struct {
	id string
	at time.Time
}

// expiries is a min-heap of expiries.
type expiries []expiry1

func (h expiries) Len() int           { return len(h) }
func (h expiries) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiries) Push(x any)        { *h = append(*h, x.(expiry1)) }
func (h *expiries) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
