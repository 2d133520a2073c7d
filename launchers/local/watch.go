package local

import (
	"sync"

	"github.com/sortie-run/sortie"
)

// watchers holds the functions [Launcher.WatchExits] registered.
type watchers struct {
	mu   sync.Mutex
	next int
	fs   map[int]func(sortie.Ref, sortie.Status)
}

// add registers f; the returned stop removes it, waiting for a call in
// progress.
func (w *watchers) add(f func(sortie.Ref, sortie.Status)) (stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fs == nil {
		w.fs = map[int]func(sortie.Ref, sortie.Status){}
	}
	id := w.next
	w.next++
	w.fs[id] = f
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			delete(w.fs, id)
			w.mu.Unlock()
		})
	}
}

// notify calls every registered function with ref and st, one call at a
// time.
func (w *watchers) notify(ref sortie.Ref, st sortie.Status) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.fs {
		f(ref, st)
	}
}
