package local

import "sync"

// Cancels returns how many times Cancel was called on l: the provider
// cancel calls the conformance suite counts.
func Cancels(l *Launcher) int64 { return l.cancels.Load() }

// HoldStarts makes l's Start calls block (a Start in flight) until release
// is called. Call it before the launcher is used.
func HoldStarts(l *Launcher) (release func()) {
	gate := make(chan struct{})
	wait := func() { <-gate }
	l.beforeStart.Store(&wait)
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}
