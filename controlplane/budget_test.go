package controlplane_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
	"github.com/sortie-run/sortie/pricing"
)

// claimedOn returns a run with a budget of 1,000,000 n$ ($0.001) and a
// heartbeat of 1 s whose attempt 1 was launched on provider (Ref.Detail
// detail) at t0 and claimed at t0 with shape.
func claimedOn(t *testing.T, provider string, detail map[string]string, shape *sortie.Usage, t0 int64) *sortie.Run {
	t.Helper()
	r := &sortie.Run{ID: sortie.NewRunID(time.UnixMilli(t0)), Agent: sortie.Manifest{Name: "probe", Runtime: "go:probe"},
		Variables: json.RawMessage(`{}`), Policy: sortie.Policy{MaxCostNanoUSD: 1_000_000, HeartbeatMs: 1000}}
	lid := sortie.NewLaunchID()
	controlplane.NewRun(r, &sortie.Reservation{Run: r, NowMs: t0, LaunchID: lid})
	ref := sortie.Ref{Provider: provider, ID: "x", RunID: r.ID, Attempt: 1, LaunchID: lid, Detail: detail}
	if err := controlplane.SetRef(r, 1, lid, ref, t0); err != nil {
		t.Fatalf("SetRef(%s) = %v, want success", provider, err)
	}
	if err := controlplane.Claim(r, sortie.Claim{RunID: r.ID, Attempt: 1, LaunchID: lid, Owner: "w", Usage: shape, NowMs: t0}); err != nil {
		t.Fatalf("Claim(%s, shape %+v) = %v, want success", provider, shape, err)
	}
	return r
}

// TestStopOverBudgetPricesTheClaimedShape: an hour into a Lambda or Cloud
// Run attempt whose worker stated its shape at the claim, the projection
// prices its compute and the run is stopped; without a shape it prices
// only the request fee (what happened before claims carried one).
//
// Hand-checked at the default table, 3,601 s projected (1 h + one
// heartbeat): Lambda 128 MB arm64 is 0.125 GB × 3,601 s × 13,333.4 n$ =
// 6,001,697 n$ plus a 200 n$ request; a Cloud Run job of 512 MiB and
// 1 vCPU is 3,601 × (18,000 + 0.5 × 2,000) = 68,419,000 n$.
func TestStopOverBudgetPricesTheClaimedShape(t *testing.T) {
	const t0 = int64(1_800_000_000_000)
	now := t0 + time.Hour.Milliseconds()
	for _, c := range []struct {
		name     string
		provider string
		detail   map[string]string
		shape    *sortie.Usage
		stopped  bool
		spent    sortie.NanoUSD
	}{
		{"lambda", "lambda", nil, &sortie.Usage{MemoryMB: 128, Arch: "arm64"}, true, 6_001_897},
		{"cloudrun job", "cloudrun", map[string]string{"mode": "job"}, &sortie.Usage{MemoryMB: 512, VCPU: 1, Billing: "job"}, true, 68_419_000},
		{"lambda without a shape", "lambda", nil, nil, false, 200},
		{"cloudrun without a shape", "cloudrun", map[string]string{"mode": "job"}, nil, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := claimedOn(t, c.provider, c.detail, c.shape, t0)
			if got := controlplane.StopOverBudget(r, pricing.Default(), now); got != c.stopped {
				t.Fatalf("StopOverBudget(1 h into the attempt, budget 1,000,000 n$) = %v (reason %q), want %v", got, r.Reason, c.stopped)
			}
			if !c.stopped {
				return
			}
			if r.Error == nil || r.Error.Type != sortie.ErrorTypeBudgetExceeded || !r.CancelRequested || r.LeaseExpiresMs != now {
				t.Fatalf("stopped run: error %+v cancel %v lease %d, want budget_exceeded, cancel requested, lease due at %d",
					r.Error, r.CancelRequested, r.LeaseExpiresMs, now)
			}
			want := "projected to the next heartbeat " + c.spent.String()
			if !strings.Contains(r.Error.Message, want) {
				t.Errorf("error message %q, want it to name the spend %q", r.Error.Message, want)
			}
		})
	}
}

// TestClaimShapeFinishWins: the finish's usage replaces the shape stated
// at the claim where it sets the same field, and keeps the rest.
func TestClaimShapeFinishWins(t *testing.T) {
	const t0 = int64(1_800_000_000_000)
	r := claimedOn(t, "cloudrun", map[string]string{"mode": "service"}, &sortie.Usage{MemoryMB: 512, VCPU: 1, Billing: "instance"}, t0)
	a := r.Current()
	_, err := controlplane.Finish(r, sortie.Finish{RunID: r.ID, Attempt: 1, LaunchID: a.LaunchID, NowMs: t0 + 1000,
		Outcome: sortie.Outcome{Result: json.RawMessage(`1`), Usage: &sortie.Usage{BilledDurationMs: 1000, MemoryMB: 1024}}})
	if err != nil {
		t.Fatalf("Finish = %v, want success", err)
	}
	if got, want := *r.Current().Usage, (sortie.Usage{BilledDurationMs: 1000, MemoryMB: 1024, VCPU: 1, Billing: "instance"}); got != want {
		t.Errorf("usage after Finish = %+v, want %+v", got, want)
	}
}
