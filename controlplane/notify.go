package controlplane

import (
	"sync"

	"github.com/sortie-run/sortie"
)

// Hub is the subscription list behind a driver's [sortie.Notifier]: drivers
// call Notify after each committed change of a run. The zero Hub is ready to
// use and safe for concurrent use.
type Hub struct {
	mu   sync.Mutex
	subs map[sortie.RunID]map[chan struct{}]struct{}
	// slots are the subscribers of NotifySlots.
	slots map[chan struct{}]struct{}
}

// Subscribe returns a channel that holds one value (coalesced) after each
// Notify of run id, and a function that ends the subscription; calling it
// more than once is harmless.
func (h *Hub) Subscribe(id sortie.RunID) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = make(map[sortie.RunID]map[chan struct{}]struct{})
	}
	if h.subs[id] == nil {
		h.subs[id] = make(map[chan struct{}]struct{})
	}
	h.subs[id][ch] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return ch, func() { once.Do(func() { h.unsubscribe(id, ch) }) }
}

func (h *Hub) unsubscribe(id sortie.RunID, ch chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs[id], ch)
	if len(h.subs[id]) == 0 {
		delete(h.subs, id)
	}
}

// Notify wakes every subscriber of run id without blocking.
func (h *Hub) Notify(id sortie.RunID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[id] {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// SubscribeSlots implements [sortie.SlotNotifier] for the driver: the
// channel holds one value (coalesced) after each NotifySlots.
func (h *Hub) SubscribeSlots() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.slots == nil {
		h.slots = make(map[chan struct{}]struct{})
	}
	h.slots[ch] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.slots, ch)
			h.mu.Unlock()
		})
	}
}

// NotifySlots wakes every slot subscriber without blocking; drivers call
// it after a committed write that gave a slot back or took a run out of
// its queue.
func (h *Hub) NotifySlots() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.slots {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
