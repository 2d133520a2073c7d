package push

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
	"github.com/sortie-run/sortie/crypto/keyring"
	"github.com/sortie-run/sortie/crypto/sign"
)

// Defaults of [Options].
const (
	DefaultMaxFailures    = 10
	DefaultBackoffBase    = time.Second
	DefaultBackoffMax     = 5 * time.Minute
	DefaultRequestTimeout = 10 * time.Second
	DefaultConcurrency    = 16
	DefaultSweepInterval  = time.Second
	DefaultSweepLimit     = controlplane.DefaultPendingPushLimit
	DefaultSweepMax       = 10_000
)

// MaxResponseBytes is how much of a receiver's response body is read (and
// discarded), in bytes; the rest is never read.
const MaxResponseBytes = 64 << 10

// maxNotified bounds the runs notified and not yet looked at; past it a
// notification is dropped and the sweep finds the change instead.
const maxNotified = 100_000

// Runs reads runs. [sortie.ControlPlane] and [*sortie.Engine] implement
// it; Get MUST return an error wrapping [sortie.ErrNotFound] for an
// unknown run, and a run at least as new as any it returned before.
type Runs interface {
	Get(ctx context.Context, id sortie.RunID) (*sortie.Run, error)
}

// Options configures a [Dispatcher]. A nil *Options means the defaults.
type Options struct {
	// MaxFailures is how many consecutive failed deliveries to one
	// configuration end it: it is marked Done with the last error.
	// Optional; defaults to 10.
	MaxFailures int
	// BackoffBase and BackoffMax shape the delay before the retry after
	// failure n: uniformly random between 1 ms and min(BackoffMax,
	// BackoffBase·2^(n-1)) ("full jitter"), in whole ms. The retry is made
	// by the first sweep after the delay. Optional; default 1 s and 5 min;
	// BackoffMax must not be below BackoffBase.
	BackoffBase, BackoffMax time.Duration
	// RequestTimeout bounds one delivery: connecting, sending, and reading
	// the status and up to [MaxResponseBytes] of the body. Optional;
	// defaults to 10 s.
	RequestTimeout time.Duration
	// Concurrency is the most deliveries in flight at once. Optional;
	// defaults to 16.
	Concurrency int
	// SweepInterval is how often [Dispatcher.Run] asks the store for
	// pending configurations, which finds changes written by other
	// processes, retries due after a backoff and work left by an earlier
	// host. Optional; defaults to 1 s.
	SweepInterval time.Duration
	// SweepLimit is the page size of a sweep's reads of pending
	// configurations, 1..1000. The store does not know run versions, so
	// every configuration of a live run is pending, delivered or not: a
	// sweep reads them all, page by page, up to SweepMax. Optional;
	// defaults to 100.
	SweepLimit int
	// SweepMax bounds how many pending configurations one sweep reads (in
	// pages of SweepLimit). A sweep that stops at the bound keeps its page
	// token and the next sweep continues from it, so with more pending
	// configurations than SweepMax every one is still looked at within
	// 2·ceil(pending/SweepMax) sweeps; a sweep that reaches the last page
	// makes the next one start over. A sweep costs one store call per page
	// and one run read per run of a page. Optional; defaults to 10,000.
	SweepMax int
	// Formats renders the messages of configurations whose Format is not
	// "" or "sortie" (the run payload, [Payload]): the body is the JSON of
	// what Formats[cfg.Format] returns for the run. The renderer gets a
	// copy of the run as the store returned it, sealed configuration,
	// resume input and checkpoint included, and alone decides what a
	// receiver sees of it (server/a2a's "a2a" renders the run as its
	// GetTask does). A renderer's error is a failed delivery, retried. A
	// configuration whose format has no renderer ends at its first
	// delivery with LastError `unknown push format "x": this host renders
	// "sortie", ...`. Keys other than "" and "sortie"; no nil renderer.
	// Optional; defaults to none.
	Formats map[string]func(run *sortie.Run) (any, error)
	// OpenToken returns the plaintext of cfg.SealedToken, which each
	// delivery to cfg carries in the headers [TokenHeader] and
	// [TokenHeaderPrefixed]; it must be 1-[MaxTokenBytes] bytes of
	// visible ASCII and inner spaces. It is called once per delivery, and
	// the plaintext is kept in that request's headers only: never stored,
	// logged or put in an error. Its error MUST NOT contain the token. An
	// error wrapping sortie.ErrUnavailable (or a context error) is a
	// failed delivery, retried; any other, or a bad token, ends the
	// configuration with LastError "open the push token: ...". A
	// configuration with a SealedToken ends at its first delivery when
	// OpenToken is nil. Optional.
	OpenToken func(ctx context.Context, cfg *sortie.PushConfig) (string, error)
	// Logger receives delivery failures (Warn) and successes (Debug); it
	// never sees a URL's query or a token. Optional; defaults to
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock of timestamps, backoffs and due times. Optional;
	// defaults to time.Now.
	Now func() time.Time
	// Owner names this dispatcher in the delivery leases it takes
	// (sortie.PushStore.LeasePushDelivery), 1-128 bytes: of the hosts
	// sharing a store, one delivers each version. Optional; defaults to a
	// random name per dispatcher.
	Owner string
}

// withDefaults returns o with defaults applied, or a
// [*sortie.ValidationError] naming a bad field.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"max_failures", int64(r.MaxFailures)}, {"backoff_base", int64(r.BackoffBase)},
		{"backoff_max", int64(r.BackoffMax)}, {"request_timeout", int64(r.RequestTimeout)},
		{"concurrency", int64(r.Concurrency)}, {"sweep_interval", int64(r.SweepInterval)},
		{"sweep_max", int64(r.SweepMax)},
	} {
		if f.v < 0 {
			return r, sortie.Invalidf(f.name, "%d must not be negative", f.v)
		}
	}
	r.MaxFailures = cmpOr(r.MaxFailures, DefaultMaxFailures)
	r.BackoffBase = cmpOr(r.BackoffBase, DefaultBackoffBase)
	r.BackoffMax = cmpOr(r.BackoffMax, max(DefaultBackoffMax, r.BackoffBase))
	r.RequestTimeout = cmpOr(r.RequestTimeout, DefaultRequestTimeout)
	r.Concurrency = cmpOr(r.Concurrency, DefaultConcurrency)
	r.SweepInterval = cmpOr(r.SweepInterval, DefaultSweepInterval)
	r.SweepLimit = cmpOr(r.SweepLimit, DefaultSweepLimit)
	r.SweepMax = cmpOr(r.SweepMax, DefaultSweepMax)
	if r.SweepLimit < 1 || r.SweepLimit > controlplane.MaxPendingPushLimit {
		return r, sortie.Invalidf("sweep_limit", "%d outside 1..%d", r.SweepLimit, controlplane.MaxPendingPushLimit)
	}
	if err := checkFormats(r.Formats); err != nil {
		return r, err
	}
	r.Formats = maps.Clone(r.Formats)
	if r.BackoffMax < r.BackoffBase {
		return r, sortie.Invalidf("backoff_max", "%s is below backoff_base %s", r.BackoffMax, r.BackoffBase)
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Owner == "" {
		b := make([]byte, 9)
		rand.Read(b)
		r.Owner = "dispatcher-" + base64.RawURLEncoding.EncodeToString(b)
	}
	return r, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Dispatcher delivers run changes to the runs' push configurations; see
// the package documentation for the delivery guarantees. Its methods are
// safe for concurrent use.
type Dispatcher struct {
	store   sortie.PushStore
	runs    Runs
	client  *http.Client
	keys    *keyring.Ring[*sign.Signer]
	o       Options
	log     *slog.Logger
	running atomic.Bool

	base   context.Context // of deliveries; ends at Shutdown's deadline
	cancel context.CancelFunc
	stop   context.Context // ends when Shutdown begins
	stopFn context.CancelFunc
	sem    chan struct{}
	wake   chan struct{}
	wg     sync.WaitGroup

	// sweepToken is where the next sweep continues ("" from the start);
	// only the one Run loop uses it.
	sweepToken string

	mu       sync.Mutex
	stopped  bool
	notified map[sortie.RunID]struct{}
	active   map[cfgKey]*activeCfg
	memo     map[cfgKey]delivered
}

// New returns a dispatcher that reads configurations and records delivery
// progress in store, reads runs from runs, sends with client and signs
// with keys. client carries the outbound destination policy: build it
// with destination.Policy.Client(); its CheckRedirect decides about
// redirects. opts may be nil. Call [Dispatcher.Run] to start it. Errors
// are [*sortie.ValidationError]s naming the argument.
func New(store sortie.PushStore, runs Runs, client *http.Client, keys Keys, opts *Options) (*Dispatcher, error) {
	switch {
	case store == nil:
		return nil, sortie.Invalidf("store", "a push store is required")
	case runs == nil:
		return nil, sortie.Invalidf("runs", "a run reader is required")
	case client == nil:
		return nil, sortie.Invalidf("client", "an HTTP client is required (destination.Policy.Client())")
	}
	ring, err := keys.ring()
	if err != nil {
		return nil, err
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &Dispatcher{store: store, runs: runs, client: client, keys: ring, o: o, log: o.Logger,
		sem: make(chan struct{}, o.Concurrency), wake: make(chan struct{}, 1),
		notified: map[sortie.RunID]struct{}{}, active: map[cfgKey]*activeCfg{}, memo: map[cfgKey]delivered{}}
	d.base, d.cancel = context.WithCancel(context.Background())
	d.stop, d.stopFn = context.WithCancel(context.Background())
	return d, nil
}

// Notify tells the dispatcher that run id changed (or that one of its
// push configurations did). It never blocks: the run is looked at by
// [Dispatcher.Run]'s loop. A notification is a hint; the sweep finds any
// change a lost one would have announced.
func (d *Dispatcher) Notify(id sortie.RunID) {
	d.mu.Lock()
	if !d.stopped && len(d.notified) < maxNotified {
		d.notified[id] = struct{}{}
	}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run sweeps the store at once and then every SweepInterval, looks at
// notified runs, and starts deliveries, until ctx ends (it returns
// ctx.Err()) or Shutdown or Close is called (it returns nil). Deliveries
// in flight when Run returns go on until Shutdown. Run returns an error
// wrapping sortie.ErrClosed after Shutdown, and an error when another
// Run call is running.
func (d *Dispatcher) Run(ctx context.Context) error {
	if d.stop.Err() != nil {
		return fmt.Errorf("push: run: %w", sortie.ErrClosed)
	}
	if !d.running.CompareAndSwap(false, true) {
		return errors.New("push: run: already running")
	}
	defer d.running.Store(false)
	loop, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(d.stop, cancel)()
	tick := time.NewTicker(d.o.SweepInterval)
	defer tick.Stop()
	d.sweep(loop)
	for {
		select {
		case <-loop.Done():
			if d.stop.Err() != nil {
				return nil
			}
			return ctx.Err()
		case <-tick.C:
			d.sweep(loop)
		case <-d.wake:
			d.drain(loop)
		}
	}
}

// Shutdown stops Run and new deliveries, and waits for the deliveries in
// flight. When ctx ends first it interrupts them and returns ctx.Err()
// once they stopped: an interrupted delivery records nothing, so it stays
// pending in the store and the next host's dispatcher makes it. Nothing a
// notification announced is lost either: it is pending in the store too.
func (d *Dispatcher) Shutdown(ctx context.Context) error {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	d.stopFn()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		d.cancel()
		return nil
	case <-ctx.Done():
		d.cancel()
		<-done
		return fmt.Errorf("push: shutdown: %w", ctx.Err())
	}
}

// Close is Shutdown without a deadline: it waits for the deliveries in
// flight, each bounded by RequestTimeout. It returns nil.
func (d *Dispatcher) Close() error {
	return d.Shutdown(context.Background())
}

func (d *Dispatcher) nowMs() int64 { return d.o.Now().UnixMilli() }
