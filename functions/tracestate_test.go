package functions

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/launchers/local"
)

// A warm worker's attempts take their trace from their invocations only:
// a span left in the context it runs them under (process state, an
// earlier invocation's) is the parent of none, and an invocation without
// a traceparent starts a new trace.
func TestAttemptTraceComesFromItsInvocation(t *testing.T) {
	exp := recordSpans(t)
	w, _ := newWorker(register(func(context.Context, *Call) (any, error) { return "ok", nil }))
	stale := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9, 9, 9}, SpanID: trace.SpanID{9}, TraceFlags: trace.FlagsSampled})
	warm := trace.ContextWithSpanContext(context.Background(), stale)
	a := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
	b := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{2}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	var invs []*sortie.Invocation
	for _, parent := range []trace.SpanContext{a, b, {}} {
		inv := testInvocation("go:h", "")
		if parent.IsValid() {
			inv.TraceParent, inv.TraceState = traceparentOf(parent), "vendor=v"+parent.TraceID().String()[:2]
		}
		if _, err := w.Execute(warm, inv, newRecorder(t)); err != nil {
			t.Fatalf("Execute(%s) = %v", inv.RunID, err)
		}
		invs = append(invs, inv)
	}
	for i, want := range []trace.SpanContext{a, b} {
		s := spansOf(t, exp, invs[i].RunID, "sortie.attempt")["sortie.attempt"]
		if s.SpanContext.TraceID() != want.TraceID() || s.Parent.SpanID() != want.SpanID() || s.SpanContext.TraceState().String() != invs[i].TraceState {
			t.Errorf("attempt %d: trace %s parent %s tracestate %q, want trace %s parent %s tracestate %q", i+1, s.SpanContext.TraceID(),
				s.Parent.SpanID(), s.SpanContext.TraceState(), want.TraceID(), want.SpanID(), invs[i].TraceState)
		}
	}
	s := spansOf(t, exp, invs[2].RunID, "sortie.attempt")["sortie.attempt"]
	if id := s.SpanContext.TraceID(); s.Parent.IsValid() || id == stale.TraceID() || id == a.TraceID() || id == b.TraceID() {
		t.Errorf("untraced invocation's attempt: trace %s parent %s, want a new root trace", id, s.Parent.SpanID())
	}
}

// The tracestate of a submission's context is stored on the run and
// handed to the attempt's invocation with the traceparent.
func TestTraceStateFromSubmitToInvocation(t *testing.T) {
	exp := recordSpans(t)
	w, _ := newWorker(register(func(context.Context, *Call) (any, error) { return "done", nil }))
	cp := memory.New()
	var mu sync.Mutex
	var got *sortie.Invocation
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		mu.Lock()
		got = inv
		mu.Unlock()
		_, err := w.Execute(ctx, inv, NewControlPlaneReporter(cp, inv, "test"))
		return err
	}})
	if err != nil {
		t.Fatalf("local.New = %v", err)
	}
	engine := sortie.NewEngine(cp, l, sortie.Agents{"traced": {Name: "traced", Runtime: "go:h"}}, nil)
	t.Cleanup(func() { engine.Close(); l.Close(); cp.Close() })
	const ts = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
	ctx := sortie.ContextWithTrace(context.Background(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ts)
	run, err := engine.Submit(ctx, &sortie.SubmitRequest{Agent: "traced"})
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	if run.TraceState != ts {
		t.Errorf("Run.TraceState = %q, want %q", run.TraceState, ts)
	}
	wctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := sortie.NewClient(engine, nil).Wait(wctx, run.ID); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	s := spansOf(t, exp, run.ID, "sortie.attempt")["sortie.attempt"]
	mu.Lock()
	defer mu.Unlock()
	if got.TraceState != ts || s.SpanContext.TraceState().String() != ts {
		t.Errorf("invocation tracestate %q, attempt span's %q; want %q", got.TraceState, s.SpanContext.TraceState(), ts)
	}
}
