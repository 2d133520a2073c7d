package local

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sortie-run/sortie"
)

// Provider is the [sortie.Ref] provider name of this launcher.
const Provider = "local"

// ResourceInProcess is the [sortie.Ref] resource of an in-process attempt.
const ResourceInProcess = "in-process"

// Detail keys of a subprocess [sortie.Ref].
const (
	// DetailStartTime is the child's start time, field 22 of
	// /proc/<pid>/stat (clock ticks after boot); it guards against pid reuse.
	DetailStartTime = "start_time"
	// DetailLog is the path of the attempt's log file.
	DetailLog = "log"
)

// maxFinished is how many ended attempts a Launcher remembers for
// Describe and for the idempotency of Start; older ones are forgotten.
const maxFinished = 1024

// defaultEnv names the host variables a worker subprocess gets when
// Options.Env is nil. Nothing else is copied, so the host's credentials
// never reach a worker.
var defaultEnv = []string{"PATH", "HOME", "TMPDIR", "LANG", "TZ"}

// Options configures a [Launcher]. Exactly one of Command and InProcess
// must be set.
type Options struct {
	// Command is the worker command of subprocess mode, for example
	// {"/usr/local/bin/sortie", "worker"}. Its first element is resolved
	// with exec.LookPath in New. Each attempt runs it once, with the
	// invocation (JSON and a newline) on its stdin. Required unless
	// InProcess is set.
	Command []string
	// Env is the complete environment of a worker subprocess, as
	// "KEY=value" strings; an empty non-nil slice is an empty environment.
	// Optional; defaults (when nil) to PATH, HOME, TMPDIR, LANG and TZ
	// copied from the host, nothing else.
	Env []string
	// LogDir receives each attempt's stdout (the NDJSON messages) and stderr
	// (the worker's logs) in <LogDir>/<run>-<attempt>.log, created with mode
	// 0600. New creates the directory (mode 0700). Optional; defaults to
	// discarding both.
	LogDir string
	// Grace is how long Cancel waits after SIGTERM before SIGKILL (or, in
	// in-process mode, for the function to return). Optional; defaults to
	// 5 s.
	Grace time.Duration
	// InProcess selects in-process mode: each attempt runs InProcess in a
	// goroutine of this process, with a context that Cancel cancels. An
	// error that is an [ExitStatuser] (the attempt ran on a warm worker
	// process that died) ends the attempt with that status. Optional;
	// defaults to subprocess mode.
	InProcess func(ctx context.Context, inv *sortie.Invocation) error
}

// Launcher is the local [sortie.Launcher]: it runs each attempt as a
// worker subprocess (its own process group) or, in in-process mode, as a
// goroutine. It also implements [sortie.Canceler], [sortie.Describer] and
// [sortie.ExitWatcher]: as the worker's parent it reports each attempt's
// exit (code, signal) the moment it is reaped. It is safe for concurrent
// use.
type Launcher struct {
	opts     Options
	resource string

	mu       sync.Mutex
	closed   bool
	attempts map[string]*attempt // by launch ID
	finished []string            // launch IDs of ended attempts, oldest first

	watchers watchers
	cancels  atomic.Int64 // Cancel calls
	// beforeStart, when set (only tests set it, through export_test.go),
	// runs at the start of each Start, outside the lock: a Start in flight.
	beforeStart atomic.Pointer[func()]
}

var (
	_ sortie.Launcher    = (*Launcher)(nil)
	_ sortie.Canceler    = (*Launcher)(nil)
	_ sortie.Describer   = (*Launcher)(nil)
	_ sortie.ExitWatcher = (*Launcher)(nil)
)

// New returns a launcher. opts must set Command or InProcess (not both);
// a nil opts is refused. It returns a [*sortie.ValidationError] naming the
// option for a missing or bad Command, and an error when LogDir cannot be
// created.
func New(opts *Options) (*Launcher, error) {
	if opts == nil {
		return nil, sortie.Invalidf("command", "options are required: set Command or InProcess")
	}
	l := &Launcher{opts: *opts, attempts: make(map[string]*attempt)}
	if l.opts.Grace <= 0 {
		l.opts.Grace = 5 * time.Second
	}
	if l.opts.InProcess != nil {
		if len(l.opts.Command) > 0 {
			return nil, sortie.Invalidf("command", "set Command or InProcess, not both")
		}
		l.resource = ResourceInProcess
		return l, nil
	}
	if err := l.initSubprocess(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Launcher) initSubprocess() error {
	if len(l.opts.Command) == 0 || l.opts.Command[0] == "" {
		return sortie.Invalidf("command", "the worker command is required in subprocess mode")
	}
	path, err := exec.LookPath(l.opts.Command[0])
	if err != nil {
		return sortie.Invalidf("command", "worker command %q: %v", l.opts.Command[0], err)
	}
	l.opts.Command = append([]string{path}, l.opts.Command[1:]...)
	l.resource = filepath.Base(path)
	if l.opts.Env == nil {
		l.opts.Env = DefaultEnv()
	}
	if l.opts.LogDir != "" {
		dir, err := filepath.Abs(l.opts.LogDir)
		if err != nil {
			return sortie.Invalidf("log_dir", "%q: %v", l.opts.LogDir, err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("local: create log directory: %w", err)
		}
		l.opts.LogDir = dir
	}
	return nil
}

// DefaultEnv returns the part of this process's environment a worker gets
// by default: PATH, HOME, TMPDIR, LANG and TZ, nothing else, so the host's
// credentials never reach a worker. Hosts append their own settings to it.
func DefaultEnv() []string {
	env := []string{}
	for _, k := range defaultEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Start launches attempt inv and returns at once, without waiting for the
// worker. It is idempotent on inv.LaunchID within this launcher: a Start of
// a launch ID it remembers (live, or among the last 1024 ended) returns the
// same Ref without launching again; across processes the worker's claim
// refuses a duplicate. It returns a [*sortie.ValidationError] (matching
// sortie.ErrInvalidArgument) for an invalid invocation or one whose JSON
// encoding is over [sortie.MaxInvocationBytes], sortie.ErrClosed after
// Close, ctx's error when ctx already ended, and the spawn error when the
// worker cannot start. ctx bounds only the call: the attempt outlives it.
func (l *Launcher) Start(ctx context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	if err := ctx.Err(); err != nil {
		return sortie.Ref{}, err
	}
	if err := inv.Validate(); err != nil {
		return sortie.Ref{}, fmt.Errorf("local: start: %w", err)
	}
	payload, err := json.Marshal(inv)
	if err != nil {
		return sortie.Ref{}, fmt.Errorf("local: start run %s attempt %d: encode invocation: %w", inv.RunID, inv.Attempt, err)
	}
	if len(payload) > sortie.MaxInvocationBytes {
		return sortie.Ref{}, fmt.Errorf("local: start run %s attempt %d: %w", inv.RunID, inv.Attempt,
			sortie.Invalidf("invocation", "encoded invocation is %d bytes, over the limit sortie.MaxInvocationBytes of %d bytes", len(payload), sortie.MaxInvocationBytes))
	}
	if f := l.beforeStart.Load(); f != nil {
		(*f)()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return sortie.Ref{}, fmt.Errorf("local: start run %s attempt %d: %w", inv.RunID, inv.Attempt, sortie.ErrClosed)
	}
	if a, ok := l.attempts[inv.LaunchID]; ok {
		return a.ref, nil
	}
	var a *attempt
	if l.opts.InProcess != nil {
		a = l.startInProcess(ctx, inv)
	} else if a, err = l.spawn(inv, payload); err != nil {
		return sortie.Ref{}, fmt.Errorf("local: start run %s attempt %d: %w", inv.RunID, inv.Attempt, err)
	}
	l.attempts[inv.LaunchID] = a
	return a.ref, nil
}

// newRef returns the Ref of an attempt of inv with the given ID.
func (l *Launcher) newRef(inv *sortie.Invocation, id string) sortie.Ref {
	return sortie.Ref{Provider: Provider, Resource: l.resource, ID: id,
		RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}
}

// ended records that a has ended, forgets the oldest ended attempts
// beyond maxFinished, and reports the exit to the watchers.
func (l *Launcher) ended(a *attempt) {
	l.mu.Lock()
	l.finished = append(l.finished, a.ref.LaunchID)
	for len(l.finished) > maxFinished {
		delete(l.attempts, l.finished[0])
		l.finished = l.finished[1:]
	}
	l.mu.Unlock()
	l.watchers.notify(a.ref, a.status)
}

// WatchExits implements [sortie.ExitWatcher]: f is called once for each
// attempt this launcher started, the moment its worker subprocess was
// reaped (or its in-process function returned), with the attempt's Ref and
// its final status: succeeded (exit code 0), failed (ExitCode, Signal and
// Reason, for example "worker exit status 97" or "worker signal: killed"),
// or cancelled (stopped by Cancel or Shutdown). Calls to f are serialised;
// after stop returns f is not called again.
func (l *Launcher) WatchExits(f func(sortie.Ref, sortie.Status)) (stop func()) {
	return l.watchers.add(f)
}

// lookup returns the attempt this launcher started for ref, if it
// remembers it.
func (l *Launcher) lookup(ref sortie.Ref) (*attempt, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.attempts[ref.LaunchID]
	if !ok || a.ref.ID != ref.ID || a.ref.Resource != ref.Resource {
		return nil, false
	}
	return a, true
}

// Close stops accepting Starts (they return sortie.ErrClosed) and returns
// at once. It neither stops nor waits for live attempts: a worker
// subprocess outlives the process that launched it, as a compute service's
// attempt would. Use [Launcher.Shutdown] to stop them.
func (l *Launcher) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return nil
}

// Shutdown closes the launcher and cancels every live attempt it started
// (as Cancel does), returning when they are all gone or ctx ends (then
// with ctx's error).
func (l *Launcher) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	var live []*attempt
	for _, a := range l.attempts {
		if !a.isDone() {
			live = append(live, a)
		}
	}
	l.mu.Unlock()
	errs := make(chan error, len(live))
	for _, a := range live {
		go func() { errs <- l.stop(ctx, a) }()
	}
	var first error
	for range live {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
