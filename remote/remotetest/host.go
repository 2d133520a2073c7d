package remotetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/launchers/local"
)

// ProbePolicy is the test agents' policy: short heartbeats and backoff, so
// cancellation and retries take milliseconds.
var ProbePolicy = sortie.Policy{HeartbeatMs: 100, LeaseMs: 1000, BackoffMs: 1, StartTimeoutMs: 2000}

// Agents returns the test agents: "probe" and "probe2", both running the
// probe handler (go:probe).
func Agents() sortie.Agents {
	return sortie.Agents{
		"probe":  {Name: "probe", Version: "1", Runtime: "go:probe", Description: "programmable test agent", Policy: ProbePolicy},
		"probe2": {Name: "probe2", Version: "1", Runtime: "go:probe", Description: "a second test agent", Policy: ProbePolicy},
	}
}

// Options configures a [Host]. A nil *Options means the defaults.
type Options struct {
	// SQLitePath puts the control plane in this SQLite file. Optional;
	// defaults to a memory control plane.
	SQLitePath string
	// Agents is the catalog. Optional; defaults to [Agents].
	Agents sortie.Agents
	// ConfigRefs is the host's allowlist of configuration references,
	// checked at submit and resolved by its worker. Optional; without it
	// every reference is refused.
	ConfigRefs *functions.ConfigRefs
	// Pricer prices the runs the engine returns. Optional; defaults to
	// none.
	Pricer sortie.Pricer
}

// Host is an engine in this process with its control plane and launcher.
type Host struct {
	CP       sortie.ControlPlane
	Engine   *sortie.Engine
	Client   *sortie.Client
	Agents   sortie.Agents
	launcher *local.Launcher
	once     sync.Once
}

// New starts a host ([Start]); tb's cleanup closes it. It fails tb when
// the host cannot be started.
func New(tb testing.TB, opts *Options) *Host {
	tb.Helper()
	h, err := Start(opts)
	if err != nil {
		tb.Fatalf("remotetest.Start = %v", err)
	}
	tb.Cleanup(h.Close)
	return h
}

// Start starts a host; call Close when done. It returns the control
// plane's or the launcher's error when one cannot be made.
func Start(opts *Options) (*Host, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Agents == nil {
		o.Agents = Agents()
	}
	h := &Host{Agents: o.Agents}
	if o.SQLitePath == "" {
		h.CP = memory.New()
	} else {
		cp, err := sqlite.Open(o.SQLitePath, nil)
		if err != nil {
			return nil, err
		}
		h.CP = cp
	}
	reg := functions.NewRegistry()
	probe.Register(reg)
	w := &functions.Worker{Registry: reg, ConfigRefs: o.ConfigRefs}
	l, err := local.New(&local.Options{Grace: 2 * time.Second, InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(h.CP, inv, "remotetest"))
		return err
	}})
	if err != nil {
		h.CP.Close()
		return nil, err
	}
	h.launcher = l
	eo := sortie.EngineOptions{Pricer: o.Pricer}
	if o.ConfigRefs != nil {
		eo.ConfigRefs = o.ConfigRefs
	}
	h.Engine = sortie.NewEngine(h.CP, l, o.Agents, &eo)
	h.Client = sortie.NewClient(h.Engine, &sortie.ClientOptions{PollInterval: 10 * time.Millisecond})
	return h, nil
}

// Close stops the engine, the launcher (cancelling attempts still running)
// and the control plane. It may be called more than once.
func (h *Host) Close() {
	h.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.launcher.Shutdown(ctx) // best effort: attempts still running are cancelled

		h.Engine.Close()
		h.CP.Close()
	})
}

// Wait waits up to 20 s for the run to be terminal or interrupted, failing
// tb otherwise.
func (h *Host) Wait(tb testing.TB, id sortie.RunID) *sortie.Run {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := h.Client.Wait(ctx, id)
	if err != nil {
		tb.Fatalf("Wait(%s) = %v", id, err)
	}
	return run
}
