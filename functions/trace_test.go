package functions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/launchers/local"
)

// recordSpans sets a tracer provider recording into memory as the global
// one, until the test ends. The global provider is process-wide: tests
// calling it must not run in parallel.
func recordSpans(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})
	return exp
}

// spansOf waits until the exporter holds a span of each name with
// attribute sortie.run_id = run or in the trace of such a span, and
// returns them by name.
func spansOf(t *testing.T, exp *tracetest.InMemoryExporter, run sortie.RunID, names ...string) map[string]tracetest.SpanStub {
	t.Helper()
	var got map[string]tracetest.SpanStub
	waitFor(t, fmt.Sprintf("spans %v of run %s", names, run), func() bool {
		got = map[string]tracetest.SpanStub{}
		traces := map[trace.TraceID]bool{}
		spans := exp.GetSpans()
		for _, s := range spans {
			if attr(s, "sortie.run_id") == string(run) {
				traces[s.SpanContext.TraceID()] = true
			}
		}
		for _, s := range spans {
			if traces[s.SpanContext.TraceID()] {
				got[s.Name] = s
			}
		}
		for _, n := range names {
			if _, ok := got[n]; !ok {
				return false
			}
		}
		return true
	})
	return got
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func traceparentOf(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// A run submitted to an engine whose in-process launcher runs the worker
// is one trace: sortie.submit → sortie.launch → sortie.attempt →
// sortie.claim and sortie.finish; the handler's context carries the
// attempt span.
func TestTraceFromSubmitToFinish(t *testing.T) {
	exp := recordSpans(t)
	var inHandler atomic.Value
	w, _ := newWorker(register(func(ctx context.Context, c *Call) (any, error) {
		inHandler.Store(trace.SpanContextFromContext(ctx))
		return "done", nil
	}))
	cp := memory.New()
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		_, err := w.Execute(ctx, inv, NewControlPlaneReporter(cp, inv, "test"))
		return err
	}})
	if err != nil {
		t.Fatalf("local.New(InProcess) = %v", err)
	}
	engine := sortie.NewEngine(cp, l, sortie.Agents{"traced": {Name: "traced", Runtime: "go:h"}}, nil)
	t.Cleanup(func() { engine.Close(); l.Close(); cp.Close() })
	client := sortie.NewClient(engine, &sortie.ClientOptions{PollInterval: 10 * time.Millisecond})
	run, err := client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "traced"})
	if err != nil {
		t.Fatalf("Submit(traced) = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	final, err := client.Wait(ctx, run.ID)
	if err != nil || final.State != sortie.StateCompleted {
		t.Fatalf("Wait(%s) = %v, %v, want completed", run.ID, final, err)
	}
	s := spansOf(t, exp, run.ID, "sortie.submit", "sortie.launch", "sortie.attempt", "sortie.claim", "sortie.finish")
	submit, launch, attempt := s["sortie.submit"], s["sortie.launch"], s["sortie.attempt"]
	if run.TraceParent != traceparentOf(submit.SpanContext) {
		t.Errorf("Run.TraceParent = %q, want the submit span's %q", run.TraceParent, traceparentOf(submit.SpanContext))
	}
	for _, p := range []struct{ child, parent string }{
		{"sortie.launch", "sortie.submit"}, {"sortie.attempt", "sortie.launch"},
		{"sortie.claim", "sortie.attempt"}, {"sortie.finish", "sortie.attempt"},
	} {
		c, pa := s[p.child], s[p.parent]
		if c.SpanContext.TraceID() != submit.SpanContext.TraceID() || c.Parent.SpanID() != pa.SpanContext.SpanID() {
			t.Errorf("span %s: trace %s parent %s, want trace %s parent %s (%s)", p.child,
				c.SpanContext.TraceID(), c.Parent.SpanID(), submit.SpanContext.TraceID(), pa.SpanContext.SpanID(), p.parent)
		}
	}
	if got, _ := inHandler.Load().(trace.SpanContext); !got.Equal(attempt.SpanContext) {
		t.Errorf("handler context's span = %s, want the attempt span %s", got.SpanID(), attempt.SpanContext.SpanID())
	}
	want := map[string]string{"sortie.run_id": string(run.ID), "sortie.attempt": "1",
		"sortie.launch_id": final.Attempts[0].LaunchID, "sortie.outcome": "result"}
	got := map[string]string{}
	for k := range want {
		got[k] = attr(attempt, k)
	}
	if d := cmp.Diff(want, got); d != "" || attempt.Status.Code != codes.Ok {
		t.Errorf("attempt span attributes (-want +got):\n%s\nstatus %v, want Ok", d, attempt.Status)
	}
	if launch.Parent.SpanID() != submit.SpanContext.SpanID() {
		t.Errorf("launch span's parent = %s, want the submit span %s", launch.Parent.SpanID(), submit.SpanContext.SpanID())
	}
}

// A worker that gets the invocation from elsewhere (no span in its
// context) starts the attempt span under inv.TraceParent, and records a
// handler's error by type, never its message.
func TestAttemptSpanUnderTraceParent(t *testing.T) {
	exp := recordSpans(t)
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true})
	w, _ := newWorker(register(func(context.Context, *Call) (any, error) {
		return nil, Permanent(errors.New("upstream said no to key s3cr3t-value"))
	}))
	inv := testInvocation("go:h", "")
	inv.TraceParent = traceparentOf(parent)
	if _, err := w.Execute(context.Background(), inv, newRecorder(t)); err != nil {
		t.Fatalf("Execute = %v", err)
	}
	s := spansOf(t, exp, inv.RunID, "sortie.attempt", "sortie.claim", "sortie.finish")["sortie.attempt"]
	if s.SpanContext.TraceID() != parent.TraceID() || s.Parent.SpanID() != parent.SpanID() || !s.Parent.IsRemote() {
		t.Errorf("attempt span: trace %s parent %s, want trace %s remote parent %s", s.SpanContext.TraceID(), s.Parent.SpanID(), parent.TraceID(), parent.SpanID())
	}
	want := sdktrace.Status{Code: codes.Error, Description: "error type error"}
	if s.Status != want || attr(s, "sortie.outcome") != "error" || attr(s, "sortie.error_type") != "error" || attr(s, "sortie.retryable") != "false" {
		t.Errorf("attempt span status %+v attributes %v, want %+v, outcome error, error_type error, retryable false", s.Status, s.Attributes, want)
	}
	if dump := fmt.Sprintf("%+v", s); strings.Contains(dump, "s3cr3t") {
		t.Errorf("attempt span carries the handler's error message: %s", dump)
	}
}

// A refused claim ends the attempt span with the error; nothing else runs.
func TestAttemptSpanClaimRefused(t *testing.T) {
	exp := recordSpans(t)
	w, _ := newWorker(register(func(context.Context, *Call) (any, error) { return "ran", nil }))
	rep := newRecorder(t)
	rep.claimErr = fmt.Errorf("claim: %w", sortie.ErrConflict)
	inv := testInvocation("go:h", "")
	if _, err := w.Execute(context.Background(), inv, rep); !errors.Is(err, sortie.ErrConflict) {
		t.Fatalf("Execute(claim refused) = %v, want ErrConflict", err)
	}
	s := spansOf(t, exp, inv.RunID, "sortie.attempt", "sortie.claim")
	for _, name := range []string{"sortie.attempt", "sortie.claim"} {
		if st := s[name].Status; st.Code != codes.Error || !strings.Contains(st.Description, "conflict") {
			t.Errorf("%s span status = %+v, want Error naming the conflict", name, st)
		}
	}
	if _, ok := s["sortie.finish"]; ok {
		t.Errorf("a refused claim has a sortie.finish span, want none")
	}
}

// An exec runtime gets the attempt span's traceparent in TRACEPARENT
// (replacing one in its ExecSpec.Env), and no TRACEPARENT when the attempt
// is not traced.
func TestExecTraceParent(t *testing.T) {
	script := `read -r inv; printf '{"result":{"output":"%s"}}\n' "${TRACEPARENT-unset}"`
	newExecWorker := func(env ...string) *Worker {
		w, _ := newWorker(NewRegistry())
		w.Exec = map[string]ExecSpec{"tp": {Command: []string{"/bin/sh", "-c", script}, Env: append([]string{"PATH=/usr/bin:/bin"}, env...)}}
		return w
	}
	rep := newRecorder(t)
	if _, err := newExecWorker().Execute(context.Background(), testInvocation("exec:tp", ""), rep); err != nil {
		t.Fatalf("Execute(untraced) = %v", err)
	}
	if got := string(rep.finished().Result); got != `"unset"` {
		t.Errorf("untraced exec runtime saw TRACEPARENT %s, want it unset", got)
	}

	exp := recordSpans(t)
	inv := testInvocation("exec:tp", "")
	rep = newRecorder(t)
	if _, err := newExecWorker("TRACEPARENT=stale").Execute(context.Background(), inv, rep); err != nil {
		t.Fatalf("Execute(traced) = %v", err)
	}
	attempt := spansOf(t, exp, inv.RunID, "sortie.attempt")["sortie.attempt"]
	if got, want := string(rep.finished().Result), `"`+traceparentOf(attempt.SpanContext)+`"`; got != want {
		t.Errorf("traced exec runtime saw TRACEPARENT %s, want the attempt span's %s", got, want)
	}
	if !attempt.SpanContext.IsValid() || attempt.Parent.IsValid() {
		t.Errorf("attempt span without inv.TraceParent: %s parent %s, want a valid root span", attempt.SpanContext.SpanID(), attempt.Parent.SpanID())
	}
}
