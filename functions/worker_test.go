package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sortie-run/sortie"
)

func TestExecuteResultAndEvents(t *testing.T) {
	w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
		var v struct{ Name string }
		if err := c.Variables(&v); err != nil {
			return nil, err
		}
		if err := c.Emit("progress", "one", map[string]int{"i": 1}); err != nil {
			return nil, err
		}
		if err := c.Emit("progress", "two", nil); err != nil {
			return nil, err
		}
		return map[string]string{"hello": v.Name}, nil
	}))
	rep := newRecorder(t)
	o, err := w.Execute(context.Background(), testInvocation("go:h", `{"name":"ada"}`), rep)
	if err != nil {
		t.Fatalf("Execute = %v, want nil", err)
	}
	events, _, _ := rep.snapshot()
	want := []sortie.Event{
		{Seq: 1, Kind: "progress", Text: "one", Data: json.RawMessage(`{"i":1}`)},
		{Seq: 2, Kind: "progress", Text: "two"},
	}
	if d := cmp.Diff(want, events, cmpopts.IgnoreFields(sortie.Event{}, "TimeMs")); d != "" {
		t.Errorf("reported events (-want +got):\n%s", d)
	}
	for _, e := range events {
		if e.TimeMs == 0 {
			t.Errorf("event %d has no time_ms", e.Seq)
		}
	}
	got := rep.finished()
	if string(got.Result) != `{"hello":"ada"}` || got.Error != nil || got.Usage == nil {
		t.Errorf("Finish(%+v), want result {\"hello\":\"ada\"} with usage", got)
	}
	if d := cmp.Diff(got, o); d != "" {
		t.Errorf("Execute returned another outcome than it reported (-reported +returned):\n%s", d)
	}
}

func TestExecuteClaimRefusedExecutesNothing(t *testing.T) {
	for _, sentinel := range []error{sortie.ErrConflict, sortie.ErrCancelRequested, sortie.ErrTerminal} {
		var calls atomic.Int32
		w, _ := newWorker(register(func(context.Context, *Call) (any, error) {
			calls.Add(1)
			return "ran", nil
		}))
		rep := newRecorder(t)
		rep.claimErr = fmt.Errorf("claim run x attempt 1: %w", sentinel)
		_, err := w.Execute(context.Background(), testInvocation("go:h", ""), rep)
		if !errors.Is(err, sentinel) {
			t.Errorf("Execute with Claim failing with %v = %v, want an error wrapping it", sentinel, err)
		}
		events, finishes, _ := rep.snapshot()
		if calls.Load() != 0 || len(events) != 0 || len(finishes) != 0 {
			t.Errorf("after a refused claim (%v): handler calls %d, events %d, finishes %d; want 0, 0, 0", sentinel, calls.Load(), len(events), len(finishes))
		}
	}
}

func TestExecuteInvalidInvocation(t *testing.T) {
	w, _ := newWorker(NewRegistry())
	inv := testInvocation("go:h", "")
	inv.HeartbeatMs = 0
	rep := newRecorder(t)
	_, err := w.Execute(context.Background(), inv, rep)
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "heartbeat_ms" {
		t.Errorf("Execute(heartbeat_ms 0) = %v, want a ValidationError for heartbeat_ms", err)
	}
	if rep.claims != 0 {
		t.Errorf("Execute(invalid invocation) claimed %d times, want 0", rep.claims)
	}
}

func TestExecuteUnknownRuntimeIsRejected(t *testing.T) {
	w, _ := newWorker(NewRegistry())
	w.Exec = map[string]ExecSpec{"known": {Command: []string{"/bin/true"}}}
	for _, runtime := range []string{"go:x", "exec:unknown"} {
		rep := newRecorder(t)
		if _, err := w.Execute(context.Background(), testInvocation(runtime, ""), rep); err != nil {
			t.Fatalf("Execute(%s) = %v, want nil", runtime, err)
		}
		got := rep.finished().Error
		want := &sortie.ErrorMessage{Type: sortie.ErrorTypeRejected, Message: "no runtime " + runtime + " on this worker host"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Execute(%s) finished with (-want +got):\n%s", runtime, d)
		}
	}
}

func TestExecuteErrorKinds(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want sortie.ErrorMessage
	}{
		{"plain", errors.New("flaky"), sortie.ErrorMessage{Type: "error", Message: "flaky", Retryable: true}},
		{"permanent", Permanent(errors.New("broken")), sortie.ErrorMessage{Type: "error", Message: "broken"}},
		{"wrapped permanent", fmt.Errorf("step 2: %w", Permanent(errors.New("broken"))), sortie.ErrorMessage{Type: "error", Message: "step 2: broken"}},
		{"rejected", Rejected("not allowed"), sortie.ErrorMessage{Type: sortie.ErrorTypeRejected, Message: "not allowed"}},
		{"invalid", sortie.Invalidf("variables.n", "too big"), sortie.ErrorMessage{Type: "invalid_argument", Message: "invalid variables.n: too big"}},
		{"error message", &sortie.ErrorMessage{Type: "quota", Message: "over", Retryable: true}, sortie.ErrorMessage{Type: "quota", Message: "over", Retryable: true}},
	}
	for _, tt := range tests {
		w, _ := newWorker(register(func(context.Context, *Call) (any, error) { return nil, tt.err }))
		rep := newRecorder(t)
		if _, err := w.Execute(context.Background(), testInvocation("go:h", ""), rep); err != nil {
			t.Fatalf("%s: Execute = %v", tt.name, err)
		}
		if d := cmp.Diff(&tt.want, rep.finished().Error); d != "" {
			t.Errorf("%s: handler error %v finished with (-want +got):\n%s", tt.name, tt.err, d)
		}
	}
}

func TestExecuteInterrupt(t *testing.T) {
	w, _ := newWorker(register(func(context.Context, *Call) (any, error) {
		return nil, Interrupt(sortie.StateAuthRequired, "log in", map[string]int{"step": 2})
	}))
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), testInvocation("go:h", ""), rep); err != nil {
		t.Fatal(err)
	}
	want := &sortie.Interrupt{State: sortie.StateAuthRequired, Prompt: "log in", Checkpoint: json.RawMessage(`{"step":2}`)}
	if d := cmp.Diff(want, rep.finished().Interrupt); d != "" {
		t.Errorf("Interrupt outcome (-want +got):\n%s", d)
	}
}

func TestExecuteBadOutputs(t *testing.T) {
	tests := []struct {
		name string
		out  any
		err  error
		want string
	}{
		{"unmarshalable output", make(chan int), nil, "marshal output"},
		{"output over the limit", strings.Repeat("x", sortie.MaxResultBytes), nil, fmt.Sprintf("limit %d", sortie.MaxResultBytes)},
		{"bad interrupt state", nil, Interrupt(sortie.StateFailed, "", nil), "interrupt.state"},
		{"unmarshalable checkpoint", nil, Interrupt(sortie.StateInputRequired, "", func() {}), "marshal interrupt checkpoint"},
		{"invalid error message", nil, &sortie.ErrorMessage{Message: "no type"}, "error.type"},
	}
	for _, tt := range tests {
		w, _ := newWorker(register(func(context.Context, *Call) (any, error) { return tt.out, tt.err }))
		rep := newRecorder(t)
		if _, err := w.Execute(context.Background(), testInvocation("go:h", ""), rep); err != nil {
			t.Fatal(err)
		}
		got := rep.finished().Error
		if got == nil || got.Type != "output" || got.Retryable || !strings.Contains(got.Message, tt.want) {
			t.Errorf("%s: finished with %+v, want a non-retryable error of type output mentioning %q", tt.name, got, tt.want)
		}
	}
}

func TestExecutePanic(t *testing.T) {
	w, logs := newWorker(register(func(context.Context, *Call) (any, error) { panic("boom 42") }))
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), testInvocation("go:h", ""), rep); err != nil {
		t.Fatal(err)
	}
	want := &sortie.ErrorMessage{Type: "panic", Message: "handler panicked: boom 42"}
	if d := cmp.Diff(want, rep.finished().Error); d != "" {
		t.Errorf("panicking handler finished with (-want +got):\n%s", d)
	}
	if !strings.Contains(logs.String(), "goroutine") {
		t.Errorf("logs after a panic = %q, want the stack", logs.String())
	}
}

func TestEmitInvalidEventReturnsError(t *testing.T) {
	var errs []error
	w, _ := newWorker(register(func(_ context.Context, c *Call) (any, error) {
		errs = append(errs, c.Emit("", "no kind", nil), c.Emit("k", strings.Repeat("x", sortie.MaxEventTextBytes+1), nil),
			c.Emit("k", "", func() {}), c.Emit("ok", "", nil))
		return nil, nil
	}))
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), testInvocation("go:h", ""), rep); err != nil {
		t.Fatal(err)
	}
	for i, field := range []string{"event.kind", "event.text", "event.data"} {
		var ve *sortie.ValidationError
		if !errors.As(errs[i], &ve) || ve.Field != field {
			t.Errorf("invalid Emit %d = %v, want a ValidationError for %s", i, errs[i], field)
		}
	}
	events, _, _ := rep.snapshot()
	if errs[3] != nil || len(events) != 1 || events[0].Seq != 1 || events[0].Kind != "ok" {
		t.Errorf("after three invalid Emits and a valid one: Emit = %v, events %+v; want the valid one sent as seq 1", errs[3], events)
	}
}

func TestConcurrentEmitsAreOrderedAndSerialised(t *testing.T) {
	const goroutines, each = 8, 25
	w, _ := newWorker(register(func(_ context.Context, c *Call) (any, error) {
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range each {
					if err := c.Emit("tick", fmt.Sprintf("%d/%d", g, i), nil); err != nil {
						t.Errorf("Emit = %v", err)
					}
				}
			})
		}
		wg.Wait()
		return nil, nil
	}))
	inv := testInvocation("go:h", "")
	inv.HeartbeatMs = 1
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	events, _, _ := rep.snapshot()
	if len(events) != goroutines*each {
		t.Fatalf("reported %d events, want %d", len(events), goroutines*each)
	}
	for i, e := range events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d reported with seq %d, want %d (in order, no gaps)", i, e.Seq, i+1)
		}
	}
}

func TestCallAccessors(t *testing.T) {
	inv := testInvocation("go:h", `{"n":"not a number"}`)
	inv.Attempt = 2
	inv.ConfigRefs = []string{"db"}
	inv.Resume = &sortie.Resume{Checkpoint: json.RawMessage(`{"step":1}`), Input: json.RawMessage(`"yes"`)}
	w, _ := newWorker(register(func(_ context.Context, c *Call) (any, error) {
		if c.RunID() != inv.RunID || c.Attempt() != 2 {
			t.Errorf("RunID, Attempt = %s, %d; want %s, 2", c.RunID(), c.Attempt(), inv.RunID)
		}
		cp := c.Invocation()
		cp.ConfigRefs[0], cp.Resume.Input[0] = "changed", 'X'
		if d := cmp.Diff(inv, c.Invocation()); d != "" {
			t.Errorf("Invocation() changed after editing a copy (-want +got):\n%s", d)
		}
		var v struct{ N int }
		var ve *sortie.ValidationError
		if err := c.Variables(&v); !errors.As(err, &ve) || ve.Field != "variables" {
			t.Errorf("Variables(n string into int) = %v, want a ValidationError for variables", err)
		}
		if r := c.Resume(); r == nil || string(r.Input) != `"yes"` || string(r.Checkpoint) != `{"step":1}` {
			t.Errorf("Resume() = %+v, want the invocation's resume data", r)
		}
		c.Logger().Info("hello from the handler")
		return nil, nil
	}))
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
}
