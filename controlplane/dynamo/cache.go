package dynamo

import (
	"sync"

	"github.com/sortie-run/sortie"
)

// maxCached bounds the runs a handle's cache holds; past it the cache
// starts empty again.
const maxCached = 4096

// attemptKey names one attempt of a run.
type attemptKey struct {
	run     sortie.RunID
	attempt int
}

// runCache keeps, per run, the item this handle last read or wrote, so
// the claim holder's own writes (Heartbeat, Finish) and its appends need
// no read first: a stale item costs one lost condition, which returns the
// current item (ALL_OLD). It also keeps, per attempt, the last event seq
// this handle stored or read, so an append numbers its events without a
// Query (a stale seq costs one lost condition on the batch key). Items are
// never changed once cached.
type runCache struct {
	mu    sync.Mutex
	items map[sortie.RunID]item
	last  map[attemptKey]int64
}

func (rc *runCache) get(id sortie.RunID) item {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.items[id]
}

func (rc *runCache) put(id sortie.RunID, it item) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.items == nil || len(rc.items) >= maxCached {
		rc.items = make(map[sortie.RunID]item)
	}
	rc.items[id] = it
}

// lastSeq returns the last event seq of the attempt this handle knows
// stored, and whether it knows one.
func (rc *runCache) lastSeq(id sortie.RunID, attempt int) (int64, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	seq, ok := rc.last[attemptKey{id, attempt}]
	return seq, ok
}

// setLast records seq as the attempt's last stored event seq when it is
// later than the one known.
func (rc *runCache) setLast(id sortie.RunID, attempt int, seq int64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.last == nil || len(rc.last) >= maxCached {
		rc.last = make(map[attemptKey]int64)
	}
	k := attemptKey{id, attempt}
	if cur, ok := rc.last[k]; !ok || seq > cur {
		rc.last[k] = seq
	}
}

// dropLast forgets the attempt's last seq (another handle stored more).
func (rc *runCache) dropLast(id sortie.RunID, attempt int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.last, attemptKey{id, attempt})
}

// forget drops run id (deleted) and its attempts' seqs.
func (rc *runCache) forget(id sortie.RunID) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.items, id)
	for k := range rc.last {
		if k.run == id {
			delete(rc.last, k)
		}
	}
}
