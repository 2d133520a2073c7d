package local

// Cancels returns how many times l stopped a live attempt (Cancel,
// Shutdown): the provider cancel calls the conformance suite counts.
func Cancels(l *Launcher) int64 { return l.cancels.Load() }
