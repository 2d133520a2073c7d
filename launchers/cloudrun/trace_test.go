package cloudrun_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/internal/otlptest"
	"github.com/sortie-run/sortie/internal/testwait"
)

// The container exports its spans with OTLP when
// OTEL_EXPORTER_OTLP_ENDPOINT is set and flushes them before it exits: a
// run submitted in a producer's trace has the container's sortie.attempt
// (under the invocation's traceparent, with its tracestate), sortie.claim
// and sortie.finish (under the attempt) in that trace, named by the
// container's OTEL_SERVICE_NAME.
func TestJobExportsItsSpansInTheRunsTrace(t *testing.T) {
	col := otlptest.Start(t)
	path := filepath.Join(t.TempDir(), "sortie.db")
	cp, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatalf("sqlite.Open(%s) = %v", path, err)
	}
	t.Cleanup(func() { cp.Close() })
	fake := startFakeEnv(t, []string{fncloudrun.EnvSQLitePath + "=" + path, fncloudrun.EnvLogLevel + "=warn",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.URL, "OTEL_SERVICE_NAME=sortie-job"})
	e := newEngine(t, &rig{cp: cp, fake: fake, launcher: jobsLauncher(t, fake)})
	const traceID, state = "4bf92f3577b34da6a3ce929d0e0e4736", "congo=t61rcWkgMzE"
	ctx := sortie.ContextWithTrace(context.Background(), "00-"+traceID+"-00f067aa0ba902b7-01", state)
	run, err := e.Submit(ctx, &sortie.SubmitRequest{Agent: "probe", Variables: []byte(`{"events":2,"output":"done"}`)})
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	if run = waitRun(t, e, run.ID, "the run to settle", false, settled); run.State != sortie.StateCompleted {
		t.Fatalf("run = %s (%s), want completed", run.State, run.Reason)
	}
	spans := map[string]otlptest.Span{}
	testwait.UntilReport(t, "the container's spans in trace "+traceID, 30*time.Second, func() (bool, string) {
		got := col.Trace(traceID)
		for _, s := range got {
			spans[s.Name] = s
		}
		_, a := spans["sortie.attempt"]
		_, c := spans["sortie.claim"]
		_, f := spans["sortie.finish"]
		return a && c && f, fmt.Sprint(otlptest.Names(got))
	})
	parent := invocationSpanID(t, fake, traceID)
	for name, want := range map[string]string{"sortie.attempt": parent, "sortie.claim": hex.EncodeToString(spans["sortie.attempt"].SpanId),
		"sortie.finish": hex.EncodeToString(spans["sortie.attempt"].SpanId)} {
		s, ok := spans[name]
		if got := hex.EncodeToString(s.ParentSpanId); !ok || got != want || s.Service != "sortie-job" || s.TraceState != state {
			t.Errorf("%s (received %v): parent %s, service %q, tracestate %q; want parent %s, service sortie-job, tracestate %s",
				name, ok, got, s.Service, s.TraceState, want, state)
		}
	}
}

// invocationSpanID returns the span ID of the traceparent that the one
// RunJob request's invocation carries, checking it is in trace traceID.
func invocationSpanID(t *testing.T, fake *fakeRun, traceID string) string {
	t.Helper()
	reqs := fake.requests()
	if len(reqs) != 1 {
		t.Fatalf("RunJob called %d times, want 1", len(reqs))
	}
	for _, v := range reqs[0].GetOverrides().GetContainerOverrides()[0].GetEnv() {
		if v.GetName() != fncloudrun.EnvInvocation {
			continue
		}
		inv, err := sortie.DecodeInvocation([]byte(v.GetValue()))
		if err != nil {
			t.Fatalf("the invocation does not decode: %v", err)
		}
		if parts := strings.Split(inv.TraceParent, "-"); len(parts) == 4 && parts[1] == traceID {
			return parts[2]
		}
		t.Fatalf("the invocation's traceparent %q is not in the producer's trace", inv.TraceParent)
	}
	t.Fatalf("the RunJob request has no %s", fncloudrun.EnvInvocation)
	return ""
}
