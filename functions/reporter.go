package functions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/sortie-run/sortie"
)

// Reporter is where the worker's messages go. The worker calls it from one
// goroutine at a time, events in seq order.
type Reporter interface {
	// Claim activates the attempt. An error means: exit without executing
	// anything (ErrConflict for a duplicate delivery or a superseded
	// launch, ErrCancelRequested, ErrTerminal).
	Claim(ctx context.Context) error
	// Heartbeat extends the claim's lease and reports whether the run's
	// cancel was requested. ErrConflict or ErrTerminal mean the claim is
	// lost.
	Heartbeat(ctx context.Context) (cancelRequested bool, err error)
	// Events reports numbered events of the attempt.
	Events(ctx context.Context, events []sortie.Event) error
	// Step records a durable step the attempt completed (its result
	// sealed when it is secret, except toward a session's host, which
	// seals it): ErrConflict when the run holds other content under its
	// name or the claim is lost, ErrTerminal, a [*sortie.ValidationError]
	// for a step the run has no room for.
	Step(ctx context.Context, st sortie.Step) error
	// Steps reads the run's recorded steps, for an invocation that names
	// them by reference ([sortie.Invocation.StepsRef]).
	Steps(ctx context.Context) ([]sortie.Step, error)
	// Finish ends the attempt with its outcome.
	Finish(ctx context.Context, o sortie.Outcome) error
}

// NewReporter returns the [Reporter] inv.Report.Mode asks for: for
// "control-plane" the one of [NewControlPlaneReporter] over cp (claiming
// as owner), for "callback" the one of [NewCallbackReporter] with client.
// It returns a [*sortie.ValidationError] naming "report.mode" for another
// mode or for "control-plane" without a control plane (cp nil), and
// NewCallbackReporter's errors.
func NewReporter(inv *sortie.Invocation, cp sortie.ControlPlane, owner string, client *http.Client) (Reporter, error) {
	if inv == nil {
		return nil, sortie.Invalidf("invocation", "is required")
	}
	switch inv.Report.Mode {
	case sortie.ReportControlPlane:
		if cp == nil {
			return nil, sortie.Invalidf("report.mode", "%q, but this worker host has no control plane configured", sortie.ReportControlPlane)
		}
		return NewControlPlaneReporter(cp, inv, owner), nil
	case sortie.ReportCallback:
		return NewCallbackReporter(inv, client)
	}
	return nil, sortie.Invalidf("report.mode", "%.64q must be %q or %q", inv.Report.Mode, sortie.ReportControlPlane, sortie.ReportCallback)
}

// NewControlPlaneReporter returns a [Reporter] that calls cp's Claim,
// Heartbeat, AppendEvents, RecordStep, Steps and Finish with inv's run ID,
// attempt and launch ID, claiming as owner (optional; defaults to "HOSTNAME/PID"). It returns
// cp's errors unchanged (they wrap the sortie sentinels).
func NewControlPlaneReporter(cp sortie.ControlPlane, inv *sortie.Invocation, owner string) Reporter {
	if owner == "" {
		owner = defaultOwner()
	}
	return &cpReporter{cp: cp, run: inv.RunID, attempt: inv.Attempt, launchID: inv.LaunchID, owner: owner}
}

type cpReporter struct {
	cp       sortie.ControlPlane
	run      sortie.RunID
	attempt  int
	launchID string
	owner    string
	shape    *sortie.Usage // stated at the claim; see WithClaimShape
}

// WithClaimShape returns rep stating shape, the compute shape of the
// worker's execution environment, when it claims (see
// [sortie.Claim.Usage]): the control plane stores it on the attempt, so a
// budget prices the live attempt's compute before the finish reports
// usage. Only shape's MemoryMB (MB), VCPU (vCPUs), Arch and Billing are
// kept. The control-plane reporter puts it on its Claim, the callback
// reporter in the claim's body and a [Tee] on its primary's claim; other
// reporters (the stream reporter, a reporter of your own) are returned
// unchanged and claim without one. A shape the control plane refuses
// ([sortie.Usage.ValidateShape]) fails the claim with a
// [*sortie.ValidationError]. rep itself is not changed.
func WithClaimShape(rep Reporter, shape *sortie.Usage) Reporter {
	shape = shape.Shape()
	switch r := rep.(type) {
	case *cpReporter:
		c := *r
		c.shape = shape
		return &c
	case *callbackReporter:
		c := *r
		c.shape = shape
		return &c
	case *tee:
		return &tee{primary: WithClaimShape(r.primary, shape), others: r.others}
	}
	return rep
}

func (r *cpReporter) claim() sortie.Claim {
	return sortie.Claim{RunID: r.run, Attempt: r.attempt, LaunchID: r.launchID, Owner: r.owner, NowMs: nowMs()}
}

// The reporter's calls keep the attempt alive: each goes out marked by
// sortie.LivenessContext.

func (r *cpReporter) Claim(ctx context.Context) error {
	c := r.claim()
	c.Usage = r.shape
	_, err := r.cp.Claim(sortie.LivenessContext(ctx), c)
	return err
}

func (r *cpReporter) Heartbeat(ctx context.Context) (bool, error) {
	run, err := r.cp.Heartbeat(sortie.LivenessContext(ctx), r.claim())
	if err != nil {
		return false, err
	}
	return run.CancelRequested, nil
}

func (r *cpReporter) Events(ctx context.Context, events []sortie.Event) error {
	_, err := r.cp.AppendEvents(sortie.LivenessContext(ctx), sortie.Append{RunID: r.run, Attempt: r.attempt, LaunchID: r.launchID, Events: events, NowMs: nowMs()})
	return err
}

func (r *cpReporter) Step(ctx context.Context, st sortie.Step) error {
	_, err := r.cp.RecordStep(ctx, sortie.StepRecord{RunID: r.run, Attempt: r.attempt, LaunchID: r.launchID, Step: st, NowMs: nowMs()})
	return err
}

func (r *cpReporter) Steps(ctx context.Context) ([]sortie.Step, error) { return r.cp.Steps(ctx, r.run) }

func (r *cpReporter) Finish(ctx context.Context, o sortie.Outcome) error {
	_, err := r.cp.Finish(sortie.LivenessContext(ctx), sortie.Finish{RunID: r.run, Attempt: r.attempt, LaunchID: r.launchID, Outcome: o, NowMs: nowMs()})
	return err
}

func nowMs() int64 { return time.Now().UnixMilli() }

// NewStreamReporter returns a [Reporter] that writes [sortie.Message] NDJSON
// lines to w: one per event and step ([sortie.StepMessage], its result in
// the clear; a sealed step is not written), then the terminal message (result, error or interrupt; usage
// is not written). Claim does nothing, Heartbeat reports no cancel request
// and Steps has none to read (an error). Writes are serialised.
func NewStreamReporter(w io.Writer) Reporter { return &streamReporter{w: w} }

type streamReporter struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *streamReporter) Claim(context.Context) error             { return nil }
func (r *streamReporter) Heartbeat(context.Context) (bool, error) { return false, nil }

// Events writes the events' lines in one Write call.
func (r *streamReporter) Events(_ context.Context, events []sortie.Event) error {
	var buf bytes.Buffer
	for i := range events {
		if err := WriteMessage(&buf, &sortie.Message{Event: &events[i]}); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.w.Write(buf.Bytes())
	return err
}

func (r *streamReporter) Step(_ context.Context, st sortie.Step) error {
	if len(st.Sealed) > 0 {
		return nil // its result is not in the clear here
	}
	return r.write(&sortie.Message{Step: stepMessage(st)})
}

// write writes one message line.
func (r *streamReporter) write(m *sortie.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return WriteMessage(r.w, m)
}

func (r *streamReporter) Steps(context.Context) ([]sortie.Step, error) {
	return nil, errors.New("a stream reporter has no steps to read: the invocation must carry them")
}

// stepMessage is the step message of st, whose result is in the clear or
// kept by reference.
func stepMessage(st sortie.Step) *sortie.StepMessage {
	return &sortie.StepMessage{Version: sortie.StepVersion, Name: st.Name, Result: st.Result, ResultRef: st.ResultRef, Secret: st.Secret,
		StartedMs: st.StartedMs, DurationMs: st.DurationMs, Tries: st.Tries}
}

func (r *streamReporter) Finish(_ context.Context, o sortie.Outcome) error {
	m := sortie.MessageOf(o)
	r.mu.Lock()
	defer r.mu.Unlock()
	return WriteMessage(r.w, m)
}

// Tee returns a [Reporter] in which primary decides the claim and the
// heartbeats (the others' Claim and Heartbeat are not called) and is read
// for steps. Events and steps go to primary, and to the others only once
// primary took them; Finish goes to all. The error is primary's, joined
// with the others'.
func Tee(primary Reporter, others ...Reporter) Reporter {
	return &tee{primary: primary, others: others}
}

type tee struct {
	primary Reporter
	others  []Reporter
}

func (t *tee) Claim(ctx context.Context) error             { return t.primary.Claim(ctx) }
func (t *tee) Heartbeat(ctx context.Context) (bool, error) { return t.primary.Heartbeat(ctx) }

func (t *tee) Events(ctx context.Context, events []sortie.Event) error {
	if err := t.primary.Events(ctx, events); err != nil {
		return err
	}
	return t.all(func(r Reporter) error { return r.Events(ctx, events) })
}

func (t *tee) Step(ctx context.Context, st sortie.Step) error {
	if err := t.primary.Step(ctx, st); err != nil {
		return err
	}
	return t.all(func(r Reporter) error { return r.Step(ctx, st) })
}

func (t *tee) Steps(ctx context.Context) ([]sortie.Step, error) { return t.primary.Steps(ctx) }

func (t *tee) Finish(ctx context.Context, o sortie.Outcome) error {
	err := t.primary.Finish(ctx, o)
	return errors.Join(err, t.all(func(r Reporter) error { return r.Finish(ctx, o) }))
}

func (t *tee) all(f func(Reporter) error) error {
	var errs []error
	for i, r := range t.others {
		if err := f(r); err != nil {
			errs = append(errs, fmt.Errorf("tee reporter %d: %w", i+1, err))
		}
	}
	return errors.Join(errs...)
}
