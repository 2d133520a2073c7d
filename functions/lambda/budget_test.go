package lambda_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sortie-run/sortie"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
)

// A run's budget stops a running Lambda invocation at its first heartbeat:
// the worker states the function's memory and architecture at its claim,
// so the control plane prices the live attempt's compute. At the default
// table 256 MB costs at least 0.25 GB × 13,333.4 n$ = 3,333 n$ a second
// (arm64; x86_64 more), so the first heartbeat (100 ms in, projecting at
// least 200 ms: 667 n$ and a 200 n$ request) passes a budget of 500 n$,
// which the request fee alone never reaches. The invocation's 10 s are
// the bound: without the shape the probe would sleep until its deadline.
func TestBudgetStopsTheRunningInvocation(t *testing.T) {
	lambdacontext.MemoryLimitInMB = 256
	f := newFixture(t, "")
	if _, err := f.e.Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{"events":0,"sleep_ms":60000}`),
		Policy: sortie.Policy{MaxCostNanoUSD: 500}}); err != nil {
		t.Fatalf("Submit(probe with a budget of 500 n$) = %v, want nil", err)
	}
	inv := <-f.q.invs
	event, _ := json.Marshal(inv)
	began := time.Now()
	resp, err := f.h.Invoke(lambdaCtx(t, "req-1", 10*time.Second), event)
	if err != nil || resp.Status != fnlambda.StatusFinished || resp.Outcome != sortie.StateCancelled { // the worker's outcome; the run's state follows
		t.Fatalf("Invoke(sleeping attempt over its budget) = %+v, %v; want a finished, cancelled attempt", resp, err)
	}
	run, _ := f.cp.Get(t.Context(), inv.RunID)
	if run.State != sortie.StateFailed || run.Error == nil || run.Error.Type != sortie.ErrorTypeBudgetExceeded ||
		!strings.Contains(run.Error.Message, "max_cost_nano_usd 500") {
		t.Fatalf("run after the invocation = %s error %+v, want failed with budget_exceeded naming the budget", run.State, run.Error)
	}
	a := run.Current()
	if a.Usage == nil || a.Usage.MemoryMB != 256 || a.Usage.Requests != 1 || (a.Usage.Arch != "arm64" && a.Usage.Arch != "x86_64") {
		t.Errorf("attempt usage %+v, want 256 MB, one request and the arch", a.Usage)
	}
	t.Logf("stopped %v after the invocation began (heartbeat 100 ms)", time.Since(began))
}
