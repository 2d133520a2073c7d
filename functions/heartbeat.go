package functions

import (
	"sync"
	"time"
)

// maxFenceMargin caps [FenceMargin].
const maxFenceMargin = 5 * time.Second

// FenceMargin is how long before its lease ends a worker that could not
// renew the lease stops its handler: a third of the lease, at most 5 s.
// A worker fences at its last successful claim or heartbeat (when it was
// sent, on the worker's own monotonic clock) plus the lease less this
// margin, so its handler has stopped (a Go handler has
// min(margin, 2 s) to return; an exec runtime is killed) before the
// control plane's lease ends and a next attempt can be claimed. With the
// policy's heartbeat_ms ≤ lease_ms / 3, that is after two heartbeats in a
// row failed.
func FenceMargin(lease time.Duration) time.Duration { return min(lease/3, maxFenceMargin) }

// fence stops the attempt's handler when its lease can no longer be
// trusted: renewed moves the deadline after each successful claim or
// heartbeat.
type fence struct {
	mu     sync.Mutex
	hold   time.Duration // lease less margin
	timer  *time.Timer
	fenced bool
}

// startFence arms the fence at renewedAt plus lease less its margin;
// onFence runs once when it fires.
func startFence(renewedAt time.Time, lease time.Duration, onFence func(since time.Duration)) *fence {
	f := &fence{hold: lease - FenceMargin(lease)}
	f.timer = time.AfterFunc(time.Until(renewedAt.Add(f.hold)), func() {
		f.mu.Lock()
		f.fenced = true
		f.mu.Unlock()
		onFence(f.hold)
	})
	return f
}

// renewed moves the fence to sentAt plus lease less margin, unless it
// fired already.
func (f *fence) renewed(sentAt time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.fenced {
		f.timer.Reset(time.Until(sentAt.Add(f.hold)))
	}
}

func (f *fence) stop() { f.timer.Stop() }

// heartbeats sends a heartbeat every HeartbeatMs until stop is closed,
// and fences the handler when the lease could not be renewed in time. The
// returned channel is closed when it has stopped.
func (a *attempt) heartbeats(stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	every := time.Duration(a.inv.HeartbeatMs) * time.Millisecond
	lease := time.Duration(a.inv.LeaseMs) * time.Millisecond
	timeout := min(reportTimeout, lease)
	f := startFence(a.renewedAt, lease, func(held time.Duration) {
		a.log.Warn("could not renew the lease; stopping the handler before the lease ends", "since_renewal", held)
		a.cancel(errFenced)
	})
	go func() {
		defer close(done)
		defer f.stop()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if !a.beat(timeout, f) {
				return
			}
		}
	}()
	return done
}

// beat sends one heartbeat and acts on its answer. It reports false when
// the claim is lost and heartbeats should stop.
func (a *attempt) beat(timeout time.Duration, f *fence) bool {
	sent := time.Now()
	cancelRequested, err := a.out.heartbeat(timeout)
	switch {
	case err != nil && claimLost(err):
		a.log.Warn("heartbeat: claim lost; stopping the handler", "err", err)
		a.cancel(errClaimLost)
		return false
	case err != nil:
		a.log.Warn("heartbeat failed; trying again at the next interval", "err", err)
		return true
	}
	f.renewed(sent)
	if cancelRequested && !a.cancelRequested.Swap(true) {
		a.log.Info("heartbeat: cancel requested; stopping the handler")
		a.cancel(errCancelRequested)
	}
	return true
}
