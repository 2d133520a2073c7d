package push

import (
	"context"
	"errors"

	"github.com/sortie-run/sortie"
)

// maxMemo bounds the remembered deliveries; past it they are forgotten,
// which costs at most one redundant delivery each.
const maxMemo = 100_000

// cfgKey names one push configuration.
type cfgKey struct {
	run sortie.RunID
	id  string
}

// activeCfg is a configuration with a delivery goroutine; again asks it
// for another pass, because the run changed during the current one.
type activeCfg struct{ again bool }

// delivered is what this process last delivered to a configuration: the
// run version and the fingerprint of its public view.
type delivered struct {
	version int64
	fp      [32]byte
}

// sweep reads the store's pending configurations page by page, from
// where the last sweep stopped, and looks at each page's runs, until the
// last page (the next sweep starts over) or SweepMax configurations (the
// next sweep continues from the page token). On a refused page token it
// starts over next time; on another error it tries the same page again.
func (d *Dispatcher) sweep(ctx context.Context) {
	for read := 0; read < d.o.SweepMax && ctx.Err() == nil; {
		limit := min(d.o.SweepLimit, d.o.SweepMax-read)
		cfgs, next, err := d.store.PendingPushConfigs(ctx, d.nowMs(), limit, d.sweepToken)
		if err != nil {
			if errors.Is(err, sortie.ErrInvalidArgument) {
				d.sweepToken = ""
			}
			if ctx.Err() == nil {
				d.log.Warn("push: sweep pending configurations", "error", err)
			}
			return
		}
		read += limit
		d.sweepToken = next
		d.considerPage(ctx, cfgs)
		if next == "" {
			return
		}
	}
}

// considerPage looks at a page of pending configurations, run by run.
func (d *Dispatcher) considerPage(ctx context.Context, cfgs []sortie.PushConfig) {
	byRun := map[sortie.RunID][]sortie.PushConfig{}
	var order []sortie.RunID
	for _, c := range cfgs {
		if _, ok := byRun[c.RunID]; !ok {
			order = append(order, c.RunID)
		}
		byRun[c.RunID] = append(byRun[c.RunID], c)
	}
	for _, id := range order {
		d.consider(ctx, id, byRun[id])
	}
}

// drain looks at the configurations of the notified runs.
func (d *Dispatcher) drain(ctx context.Context) {
	d.mu.Lock()
	ids := d.notified
	d.notified = map[sortie.RunID]struct{}{}
	d.mu.Unlock()
	for id := range ids {
		if ctx.Err() != nil {
			return // the changes are pending in the store for the sweep
		}
		cfgs, err := d.store.ListPushConfigs(ctx, id)
		if err != nil {
			if !errors.Is(err, sortie.ErrNotFound) && ctx.Err() == nil {
				d.log.Warn("push: list configurations", "run", id, "error", err)
			}
			continue
		}
		d.consider(ctx, id, cfgs)
	}
}

// consider reads run id once and schedules those of its configurations
// that are due and behind it.
func (d *Dispatcher) consider(ctx context.Context, id sortie.RunID, cfgs []sortie.PushConfig) {
	now := d.nowMs()
	var due []sortie.PushConfig
	for _, c := range cfgs {
		if !c.Delivery.Done && c.Delivery.NextAttemptMs <= now {
			due = append(due, c)
		}
	}
	if len(due) == 0 {
		return
	}
	run, err := d.runs.Get(ctx, id)
	if err != nil && !errors.Is(err, sortie.ErrNotFound) {
		if ctx.Err() == nil {
			d.log.Warn("push: read run", "run", id, "error", err)
		}
		return
	}
	var fp [32]byte
	if run != nil {
		fp = fingerprint(PublicRun(run))
	}
	for _, c := range due {
		if run == nil || d.wants(&c, run, fp) { // an unknown run: deliver gives up
			d.schedule(ctx, cfgKey{id, c.ID})
		}
	}
}

// wants reports whether cfg needs a delivery of run, whose public view
// has fingerprint fp: a newer version whose public view changed since this
// process delivered to cfg (a heartbeat alone changes nothing a receiver
// sees), a terminal version, or a terminal run not yet marked Done.
func (d *Dispatcher) wants(cfg *sortie.PushConfig, run *sortie.Run, fp [32]byte) bool {
	if run.Version <= cfg.Delivery.DeliveredVersion || run.State.Terminal() {
		return run.State.Terminal()
	}
	d.mu.Lock()
	m, ok := d.memo[cfgKey{cfg.RunID, cfg.ID}]
	d.mu.Unlock()
	return !ok || m.version != cfg.Delivery.DeliveredVersion || m.fp != fp
}

// schedule starts a delivery goroutine for k, or asks the running one for
// another pass. It waits for a free slot of Concurrency, or for ctx.
func (d *Dispatcher) schedule(ctx context.Context, k cfgKey) {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	if a, ok := d.active[k]; ok {
		a.again = true
		d.mu.Unlock()
		return
	}
	d.active[k] = &activeCfg{}
	d.wg.Add(1)
	d.mu.Unlock()
	select {
	case d.sem <- struct{}{}:
		go d.drive(k)
	case <-ctx.Done():
		d.mu.Lock()
		delete(d.active, k)
		d.mu.Unlock()
		d.wg.Done()
	}
}

// drive delivers to k until no pass is asked for, one delivery at a time:
// so a configuration gets its versions in order.
func (d *Dispatcher) drive(k cfgKey) {
	defer func() {
		<-d.sem
		d.wg.Done()
	}()
	for again := true; again; again = d.again(k) {
		d.deliver(d.base, k)
	}
}

// again reports whether another pass of k was asked for, and ends k's
// turn when not (or when the dispatcher is shutting down).
func (d *Dispatcher) again(k cfgKey) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.active[k]
	if a.again && !d.stopped {
		a.again = false
		return true
	}
	delete(d.active, k)
	return false
}

// remember records that version of k's run with fingerprint fp was
// delivered.
func (d *Dispatcher) remember(k cfgKey, version int64, fp [32]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.memo) >= maxMemo {
		clear(d.memo)
	}
	d.memo[k] = delivered{version, fp}
}

// forget drops what is remembered of k (done or deleted).
func (d *Dispatcher) forget(k cfgKey) {
	d.mu.Lock()
	delete(d.memo, k)
	d.mu.Unlock()
}
