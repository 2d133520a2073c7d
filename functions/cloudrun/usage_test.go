package cloudrun_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/pricing"
)

// LoadEnv reads the container's size as Cloud Run writes limits, and
// names the variable it cannot read.
func TestLoadEnvSize(t *testing.T) {
	base := map[string]string{cloudrun.EnvSQLitePath: "/x", cloudrun.EnvInvocation: "{}"}
	for _, tc := range []struct {
		mem, cpu string
		want     cloudrun.Size
		field    string
	}{
		{"", "", cloudrun.Size{MemoryMiB: 512, VCPU: 1}, ""},
		{"2Gi", "2", cloudrun.Size{MemoryMiB: 2048, VCPU: 2}, ""},
		{"1G", "1000m", cloudrun.Size{MemoryMiB: 954, VCPU: 1}, ""}, // 10⁹ bytes = 953.67 MiB, rounded up
		{"256Mi", "0.5", cloudrun.Size{MemoryMiB: 256, VCPU: 0.5}, ""},
		{"lots", "1", cloudrun.Size{}, cloudrun.EnvMemory},
		{"-1Mi", "1", cloudrun.Size{}, cloudrun.EnvMemory},
		{"512Mi", "two", cloudrun.Size{}, cloudrun.EnvCPU},
		{"512Mi", "0", cloudrun.Size{}, cloudrun.EnvCPU},
	} {
		env := map[string]string{cloudrun.EnvMemory: tc.mem, cloudrun.EnvCPU: tc.cpu}
		e, err := cloudrun.LoadEnv(func(k string) string { return env[k] + base[k] })
		if tc.field != "" {
			if ve, ok := err.(*sortie.ValidationError); !ok || ve.Field != tc.field {
				t.Errorf("LoadEnv(memory %q cpu %q) = %v, want a ValidationError on %s", tc.mem, tc.cpu, err, tc.field)
			}
			continue
		}
		if err != nil || e.Size != tc.want {
			t.Errorf("LoadEnv(memory %q cpu %q) = %+v, %v; want %+v", tc.mem, tc.cpu, e, err, tc.want)
		}
	}
}

// runAsJob reserves run (attempt 1 launched; ref recorded when given) in
// a fresh SQLite control plane and runs it as a Cloud Run job container
// of 512 MiB and 1 vCPU does, with the run's heartbeat and lease and a
// deadline of deadline from now; it returns the run as stored after.
func runAsJob(t *testing.T, run *sortie.Run, ref *sortie.Ref, deadline time.Duration) *sortie.Run {
	t.Helper()
	ctx := context.Background()
	cp, err := sqlite.Open(filepath.Join(t.TempDir(), "sortie.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	run.ID, run.Agent = sortie.NewRunID(time.Now()), sortie.Manifest{Name: "probe", Runtime: "go:probe"}
	lid := sortie.NewLaunchID()
	if _, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: time.Now().UnixMilli(), LaunchID: lid}); err != nil {
		t.Fatal(err)
	}
	if ref != nil {
		ref.RunID, ref.Attempt, ref.LaunchID = run.ID, 1, lid
		if _, err := cp.SetRef(ctx, run.ID, 1, lid, *ref); err != nil {
			t.Fatal(err)
		}
	}
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: run.ID, Attempt: 1, LaunchID: lid, Agent: run.Agent,
		Variables: run.Variables, DeadlineMs: time.Now().Add(deadline).UnixMilli(), HeartbeatMs: run.Policy.HeartbeatMs,
		LeaseMs: run.Policy.LeaseMs, Report: sortie.Report{Mode: sortie.ReportControlPlane}}
	b, _ := json.Marshal(inv)
	env := map[string]string{cloudrun.EnvSQLitePath: "/x", cloudrun.EnvInvocation: string(b), cloudrun.EnvMemory: "512Mi", cloudrun.EnvCPU: "1"}
	e, err := cloudrun.LoadEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	reg := functions.NewRegistry()
	probe.Register(reg)
	if _, err := e.RunJob(ctx, &functions.Worker{Registry: reg}, cp); err != nil {
		t.Fatalf("RunJob = %v", err)
	}
	got, err := cp.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A job's attempt records the container's size, job billing and a billed
// time in whole 100 ms, so pricing prices it as Cloud Run bills jobs:
// 1 vCPU and 0.5 GiB cost 1,800 + 100 = 1,900 n$ per 100 ms.
func TestJobRecordsItsUsage(t *testing.T) {
	got := runAsJob(t, &sortie.Run{Variables: json.RawMessage(`{"sleep_ms":150}`),
		Policy: sortie.Policy{HeartbeatMs: 1000, LeaseMs: 3000}}, nil, time.Minute)
	u := got.Attempts[0].Usage
	if u == nil || u.Billing != "job" || u.MemoryMB != 512 || u.VCPU != 1 || u.BilledDurationMs < 200 || u.BilledDurationMs%100 != 0 {
		t.Fatalf("attempt usage %+v, want job billing, 512 MiB, 1 vCPU and ≥ 200 ms in whole 100 ms", u)
	}
	got.Attempts[0].Ref = &sortie.Ref{Provider: "cloudrun", Detail: map[string]string{"mode": "job"}}
	c := pricing.Default().Price(got)
	if want := sortie.NanoUSD(1900 * u.BilledDurationMs / 100); c.Components[sortie.ComponentCompute] != want {
		t.Errorf("compute cost %d n$ for %d ms, want %d (1,900 n$ per 100 ms)", c.Components[sortie.ComponentCompute], u.BilledDurationMs, want)
	}
}

// A run's budget stops a running job at its first heartbeat: the job
// states its size and job billing at its claim, so the control plane
// prices the live attempt. 1 vCPU and 0.5 GiB cost 19,000 n$ a second, so
// the first heartbeat (100 ms in, projecting 200 ms: 3,800 n$) passes a
// budget of 1,000 n$; unpriced, the probe would sleep until its 10 s
// deadline. (The lease is 3 s so a loaded machine cannot fence the
// attempt before its budget stops it.)
func TestJobStoppedByItsBudget(t *testing.T) {
	got := runAsJob(t, &sortie.Run{Variables: json.RawMessage(`{"sleep_ms":60000}`),
		Policy: sortie.Policy{MaxCostNanoUSD: 1000, HeartbeatMs: 100, LeaseMs: 3000}},
		&sortie.Ref{Provider: "cloudrun", ID: "exec-1", Detail: map[string]string{"mode": "job"}}, 10*time.Second)
	if got.State != sortie.StateFailed || got.Error == nil || got.Error.Type != sortie.ErrorTypeBudgetExceeded {
		t.Fatalf("run after the job = %s error %+v, want failed with budget_exceeded", got.State, got.Error)
	}
	if u := got.Attempts[0].Usage; u == nil || u.Billing != "job" || u.MemoryMB != 512 || u.VCPU != 1 || u.BilledDurationMs >= 10_000 {
		t.Errorf("attempt usage %+v, want job billing, 512 MiB, 1 vCPU, stopped well before the 10 s deadline", u)
	}
}
