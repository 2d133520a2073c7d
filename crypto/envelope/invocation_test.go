package envelope_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/testrig/localkms"
)

func testRun(n int) *sortie.Run {
	return &sortie.Run{ID: sortie.RunID(fmt.Sprintf("01JRUN%020d", n)), Agent: sortie.Manifest{Name: "probe", Runtime: "go:probe"}}
}

func invocationOf(run *sortie.Run, attempt int, sealed []byte) *sortie.Invocation {
	return &sortie.Invocation{Version: sortie.InvocationVersion, RunID: run.ID, Attempt: attempt,
		Agent: run.Agent, SealedConfig: sealed}
}

// simulateRun does what the engine and worker do for one attempt of run:
// seal at rest (submit), re-seal for attempt 1 (launch), open (worker).
func simulateRun(t *testing.T, host, worker *envelope.Config, run *sortie.Run) {
	t.Helper()
	atRest, err := host.SealConfig(bg, run, []byte(secret))
	if err != nil {
		t.Fatalf("SealConfig(run %s) = %v", run.ID, err)
	}
	inv := invocationOf(run, 1, atRest)
	if err := host.Seal(bg, inv); err != nil {
		t.Fatalf("Seal(run %s attempt 1) = %v", run.ID, err)
	}
	got, _, err := worker.Open(bg, inv)
	if err != nil || string(got) != secret {
		t.Fatalf("Open(run %s attempt 1) = %q, %v; want %q", run.ID, got, err, secret)
	}
}

// TestKMSRequestsPerRun counts the AWS KMS requests (local-kms) that 10
// runs of one agent make, engine and worker in separate processes (each
// its own keeper), with and without the data-key cache.
func TestKMSRequestsPerRun(t *testing.T) {
	const runs = 10
	for _, tc := range []struct {
		name               string
		cache              *envelope.CacheOptions
		wantHost, wantWork int64
	}{
		{"without cache", nil, 3 * runs, runs},
		{"with cache", &envelope.CacheOptions{}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostKEK, workerKEK := awsKEK(t, localkms.AliasA), awsKEK(t, localkms.AliasA)
			host := envelope.NewConfig(envelope.New(ring(t, "aws-a", hostKEK), &envelope.Options{Cache: tc.cache}))
			worker := envelope.NewConfig(envelope.New(ring(t, "aws-a", workerKEK), &envelope.Options{Cache: tc.cache}))
			for n := range runs {
				simulateRun(t, host, worker, testRun(n))
			}
			got := [2]int64{hostKEK.Requests(), workerKEK.Requests()}
			if diff := cmp.Diff([2]int64{tc.wantHost, tc.wantWork}, got); diff != "" {
				t.Errorf("KMS requests [engine, worker] for %d runs (-want +got):\n%s", runs, diff)
			}
			t.Logf("%s: %d runs made %d KMS requests (engine %d, worker %d): %.1f per run",
				tc.name, runs, got[0]+got[1], got[0], got[1], float64(got[0]+got[1])/runs)
		})
	}
}

// An attempt's envelope opens for that attempt only, and the worker
// cannot open the copy at rest.
func TestConfigBindsAttempts(t *testing.T) {
	cfg := envelope.NewConfig(envelope.New(ring(t, "k", localKEK(t, 1)), nil))
	run := testRun(1)
	atRest, err := cfg.SealConfig(bg, run, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cfg.Open(bg, invocationOf(run, 1, atRest)); !errors.Is(err, envelope.ErrBinding) {
		t.Errorf("Open(the copy at rest as attempt 1) = %v, want ErrBinding", err)
	}
	inv1 := invocationOf(run, 1, atRest)
	if err := cfg.Seal(bg, inv1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cfg.Open(bg, invocationOf(run, 2, inv1.SealedConfig)); err == nil {
		t.Error("Open(attempt 1's envelope as attempt 2) = nil error, want an error")
	}
	if _, _, err := cfg.Open(bg, invocationOf(testRun(2), 1, inv1.SealedConfig)); err == nil {
		t.Error("Open(run 1's envelope as run 2) = nil error, want an error")
	}
	none := invocationOf(run, 1, nil)
	if err := cfg.Seal(bg, none); err != nil || none.SealedConfig != nil {
		t.Errorf("Seal(invocation without configuration) = %v, sealed %q; want no change", err, none.SealedConfig)
	}
}

// The engine's key-management requests reach the attempt's usage through
// a sortie.Meter in the context: the meter counts what the KEK served.
func TestMeterCountsEngineRequests(t *testing.T) {
	kek := localKEK(t, 3)
	host := envelope.NewConfig(envelope.New(ring(t, "k", kek), nil))
	run := testRun(7)
	var m sortie.Meter
	ctx := sortie.WithMeter(bg, &m)
	atRest, err := host.SealConfig(ctx, run, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Seal(ctx, invocationOf(run, 1, atRest)); err != nil {
		t.Fatal(err)
	}
	if m.KMSRequests() != 3 || kek.Requests() != 3 {
		t.Errorf("meter %d, KEK %d requests after SealConfig and Seal; want 3 each (generate, decrypt, generate)",
			m.KMSRequests(), kek.Requests())
	}
}
