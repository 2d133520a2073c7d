package functions

import (
	"time"
)

// heartbeats sends a heartbeat every HeartbeatMs until stop is closed. The
// returned channel is closed when it has stopped.
func (a *attempt) heartbeats(stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	every := time.Duration(a.inv.HeartbeatMs) * time.Millisecond
	timeout := min(reportTimeout, time.Duration(a.inv.LeaseMs)*time.Millisecond)
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if !a.beat(timeout) {
				return
			}
		}
	}()
	return done
}

// beat sends one heartbeat and acts on its answer. It reports false when
// the claim is lost and heartbeats should stop.
func (a *attempt) beat(timeout time.Duration) bool {
	cancelRequested, err := a.out.heartbeat(timeout)
	switch {
	case err != nil && claimLost(err):
		a.log.Warn("heartbeat: claim lost; stopping the handler", "err", err)
		a.cancel(errClaimLost)
		return false
	case err != nil:
		a.log.Warn("heartbeat failed; trying again at the next interval", "err", err)
	case cancelRequested && !a.cancelRequested.Swap(true):
		a.log.Info("heartbeat: cancel requested; stopping the handler")
		a.cancel(errCancelRequested)
	}
	return true
}
