package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sortie-run/sortie"
)

// ErrPoolClosed is what an attempt gets from a [Pool] after Close.
var ErrPoolClosed = errors.New("functions: the worker pool is closed")

// Bounds of [PoolOptions.Size].
const (
	// DefaultPoolSize is the size of a pool whose Size is 0.
	DefaultPoolSize = 16
	// MaxPoolSize is the largest Size.
	MaxPoolSize = 1024
)

// PoolOptions configures a [Pool]. A nil *PoolOptions means the defaults.
type PoolOptions struct {
	// Size is the most worker processes alive at once: an attempt that
	// finds none idle starts one while fewer are alive, else waits for
	// one; at most [MaxPoolSize]. Optional; defaults to
	// [DefaultPoolSize].
	Size int
	// RecycleAfter is how many attempts a process serves before it is
	// replaced by a new one. Optional; defaults to 0: never.
	RecycleAfter int
	// Grace is how long a process has to end a cancelled attempt (and to
	// exit once its stdin closed) before SIGKILL. Optional; defaults to
	// the spec's GraceMs, else 5 s.
	Grace time.Duration
	// Logger receives the pool's logs and the processes' stderr lines
	// written between attempts. Optional; defaults to slog.Default().
	Logger *slog.Logger
}

// Pool keeps warm worker processes of one command speaking the
// [SessionVersion] protocol, like a serverless platform's warm execution
// environments: an attempt takes an idle process (or starts one, up to
// Size), runs on it and gives it back. A process that died, broke the
// protocol, did not stop a cancelled attempt within Grace or served
// RecycleAfter attempts is replaced. Processes get exactly the spec's
// environment, the same for every attempt; an attempt's inline
// configuration travels in its invoke frame. Use it as a [Worker.Warm]
// runtime. It is safe for concurrent use.
type Pool struct {
	spec ExecSpec
	opts PoolOptions

	mu      sync.Mutex
	idle    []*warm // most recently used last
	busy    map[*warm]struct{}
	live    int // processes started and not retired
	changed chan struct{}
	closed  bool
	started int            // processes started
	stopped sync.WaitGroup // retirements in progress
}

// NewPool returns a pool of spec's processes, started on demand. spec is
// the command of a session worker (`sortie worker --session`, or an exec
// runtime whose Protocol is [SessionVersion]); opts may be nil. It returns
// a [*sortie.ValidationError] for a spec without a command or a negative
// option.
func NewPool(spec ExecSpec, opts *PoolOptions) (*Pool, error) {
	p := &Pool{spec: spec, changed: make(chan struct{}), busy: map[*warm]struct{}{}}
	if opts != nil {
		p.opts = *opts
	}
	switch {
	case len(spec.Command) == 0 || spec.Command[0] == "":
		return nil, invalidPool("command", "a session worker command is required")
	case p.opts.Size < 0 || p.opts.RecycleAfter < 0 || p.opts.Grace < 0:
		return nil, invalidPool("options", "size, recycle_after and grace must not be negative")
	case p.opts.Size > MaxPoolSize:
		return nil, invalidPool("options", "size %d over %d", p.opts.Size, MaxPoolSize)
	}
	if p.opts.Size == 0 {
		p.opts.Size = DefaultPoolSize
	}
	if p.opts.Grace == 0 {
		p.opts.Grace = time.Duration(cmpOr(spec.GraceMs, defaultGraceMs)) * time.Millisecond
	}
	if p.opts.Logger == nil {
		p.opts.Logger = slog.Default()
	}
	return p, nil
}

func cmpOr(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// acquire returns an idle process, a new one, or the first released while
// it waits; ErrPoolClosed after Close, ctx's error when ctx ends first.
func (p *Pool) acquire(ctx context.Context) (*warm, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrPoolClosed
		}
		if w := p.takeIdleLocked(); w != nil {
			p.busy[w] = struct{}{}
			p.mu.Unlock()
			return w, nil
		}
		if p.live < p.opts.Size {
			p.live++
			p.mu.Unlock()
			w, err := p.start()
			if err == nil {
				p.mu.Lock()
				p.busy[w] = struct{}{}
				p.mu.Unlock()
			}
			return w, err
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// takeIdleLocked pops the most recently used idle process that is still
// usable, retiring the others it meets.
func (p *Pool) takeIdleLocked() *warm {
	for len(p.idle) > 0 {
		w := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if w.usable() {
			return w
		}
		p.retireLocked(w)
	}
	return nil
}

// start starts a process in a slot acquire reserved.
func (p *Pool) start() (*warm, error) {
	w, err := startWarm(p.spec, p.opts.Logger)
	if err != nil {
		p.mu.Lock()
		p.live--
		p.wakeLocked()
		p.mu.Unlock()
		return nil, fmt.Errorf("start worker process %s: %w", p.spec.Command[0], err)
	}
	p.mu.Lock()
	p.started++
	p.mu.Unlock()
	p.opts.Logger.Debug("worker process started", "pid", w.pid(), "command", p.spec.Command[0])
	return w, nil
}

// release gives back a process an attempt held; reusable is false when
// the attempt saw it misbehave.
func (p *Pool) release(w *warm, reusable bool) {
	w.end(p.opts.Logger)
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.busy, w)
	recycle := p.opts.RecycleAfter > 0 && w.served >= p.opts.RecycleAfter
	if !reusable || recycle || p.closed || !w.usable() {
		p.retireLocked(w)
		return
	}
	p.idle = append(p.idle, w)
	p.wakeLocked()
}

// retireLocked frees w's slot and stops it in the background.
func (p *Pool) retireLocked(w *warm) {
	p.live--
	p.wakeLocked()
	p.stopped.Add(1)
	go func() {
		defer p.stopped.Done()
		w.stop(p.opts.Grace)
		p.opts.Logger.Debug("worker process retired", "pid", w.pid(), "attempts", w.served, "broken", w.broken)
	}()
}

// wakeLocked wakes the attempts waiting for a process.
func (p *Pool) wakeLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// PoolStats counts a pool's processes.
type PoolStats struct {
	// Live is how many are alive (idle or running an attempt) or starting.
	Live int
	// Idle is how many wait for an attempt.
	Idle int
	// Started is how many were started since NewPool.
	Started int
}

// Stats returns the pool's counts now.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Live: p.live, Idle: len(p.idle), Started: p.started}
}

// Running returns the process ID of each attempt in progress, by launch
// ID: where an operator finds the process running an attempt.
func (p *Pool) Running() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for w := range p.busy {
		if id := w.launch(); id != "" {
			out[id] = w.pid()
		}
	}
	return out
}

// Close stops the idle processes and refuses new attempts; the processes
// of attempts in progress stop when those end. It waits until every
// process is gone, or ctx ends (then returning its error).
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	for _, w := range p.idle {
		p.retireLocked(w)
	}
	p.idle = nil
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		for {
			p.mu.Lock()
			live, changed := p.live, p.changed
			p.mu.Unlock()
			if live == 0 {
				break
			}
			<-changed
		}
		p.stopped.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func invalidPool(field, format string, args ...any) error {
	return sortie.Invalidf("pool."+field, format, args...)
}

// NewPools returns the [Worker.Warm] pools of the exec runtimes in specs
// whose Protocol is [SessionVersion], keyed "exec:ID", each with opts.
func NewPools(specs map[string]ExecSpec, opts *PoolOptions) (map[string]*Pool, error) {
	pools := map[string]*Pool{}
	for id, spec := range specs {
		if spec.Protocol != SessionVersion {
			continue
		}
		p, err := NewPool(spec, opts)
		if err != nil {
			return nil, err
		}
		pools["exec:"+id] = p
	}
	return pools, nil
}
