package server

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/sortie-run/sortie"
)

// feedRing is the most events a feed keeps; followers further behind read
// the control plane directly until they reach the ring.
const feedRing = 4096

// feedPage is the page size of the feed's event reads.
const feedPage = 500

// hub shares one reader per followed run between all its followers, so a
// thousand followers of a run cost one read per change (or per poll), not
// a thousand.
type hub struct {
	eng  *sortie.Engine
	poll time.Duration
	log  *slog.Logger

	mu    sync.Mutex
	feeds map[sortie.RunID]*feed
}

func newHub(eng *sortie.Engine, poll time.Duration, log *slog.Logger) *hub {
	return &hub{eng: eng, poll: poll, log: log, feeds: map[sortie.RunID]*feed{}}
}

// feed reads one run and its events and broadcasts each change.
type feed struct {
	id     sortie.RunID
	refs   int // guarded by hub.mu
	cancel context.CancelFunc

	mu      sync.Mutex
	base    sortie.Cursor  // evs are the events after base
	evs     []sortie.Event // in cursor order; elements never change
	run     *sortie.Run    // the last run read
	final   bool           // run is terminal or interrupted and evs hold all its events
	err     error          // a read error that ends the feed (the run is gone)
	changed chan struct{}  // closed and replaced at each change
}

// feedState is a follower's snapshot of a feed.
type feedState struct {
	base    sortie.Cursor
	evs     []sortie.Event
	run     *sortie.Run
	final   bool
	err     error
	changed <-chan struct{}
}

// acquire returns the run's feed, starting it (from after) if none runs.
func (h *hub) acquire(id sortie.RunID, after sortie.Cursor) *feed {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f, ok := h.feeds[id]; ok {
		f.refs++
		return f
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &feed{id: id, refs: 1, cancel: cancel, base: after, changed: make(chan struct{})}
	h.feeds[id] = f
	go h.read(ctx, f)
	return f
}

// release drops a follower; the last one stops the feed.
func (h *hub) release(f *feed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f.refs--; f.refs == 0 {
		delete(h.feeds, f.id)
		f.cancel()
	}
}

func (f *feed) state() feedState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return feedState{base: f.base, evs: f.evs, run: f.run, final: f.final, err: f.err, changed: f.changed}
}

// read polls the run until it is final, the run is gone or ctx ends,
// waking on in-process notifications and every poll interval.
func (h *hub) read(ctx context.Context, f *feed) {
	wake, stop := h.eng.Watch(f.id)
	defer stop()
	tick := time.NewTicker(h.poll)
	defer tick.Stop()
	tail := f.state().base
	for {
		done, err := h.readOnce(ctx, f, &tail)
		if done || ctx.Err() != nil {
			return
		}
		if err != nil {
			h.log.Warn("follow: read failed; retrying", "run", f.id, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
		}
	}
}

// readOnce reads the run, then its new events (events are stored before
// the attempt ends, so a final run read first has all its events below),
// and publishes them. done reports the feed is over.
func (h *hub) readOnce(ctx context.Context, f *feed, tail *sortie.Cursor) (done bool, err error) {
	run, err := h.eng.GetStored(ctx, f.id) // a payload kept by reference stays there
	if errors.Is(err, sortie.ErrNotFound) {
		f.publish(nil, nil, false, err)
		return true, nil
	} else if err != nil {
		return false, err
	}
	var fresh []sortie.Event
	for {
		evs, err := h.eng.Events(ctx, f.id, *tail, feedPage)
		if err != nil {
			return false, err
		}
		fresh = append(fresh, evs...)
		if len(evs) > 0 {
			*tail = evs[len(evs)-1].Cursor()
		}
		if len(evs) < feedPage {
			break
		}
	}
	final := run.State.Terminal() || run.State.Interrupted()
	f.publish(fresh, run, final, nil)
	return final, nil
}

// publish adds events and the run, trims the ring and wakes followers
// when anything changed.
func (f *feed) publish(evs []sortie.Event, run *sortie.Run, final bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := len(evs) > 0 || final || err != nil || f.run == nil ||
		(run != nil && run.Version != f.run.Version)
	if len(evs) > 0 {
		f.evs = append(f.evs, evs...)
	}
	if n := len(f.evs) - feedRing; n > 0 {
		f.base = f.evs[n-1].Cursor()
		f.evs = append([]sortie.Event(nil), f.evs[n:]...)
	}
	if run != nil {
		f.run = run
	}
	f.final, f.err = final, err
	if changed {
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// after returns the events of st after cur (at most limit, 0 for all).
func (st *feedState) after(cur sortie.Cursor, limit int) []sortie.Event {
	i := sort.Search(len(st.evs), func(i int) bool { return cur.Before(st.evs[i].Cursor()) })
	evs := st.evs[i:]
	if limit > 0 && len(evs) > limit {
		evs = evs[:limit]
	}
	return evs
}
