package envelope_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/internal/logbuf"
	"github.com/sortie-run/sortie/launchers/local"
	"github.com/sortie-run/sortie/testrig/localkms"
)

// canary is the secret placed in inline configuration. It must never
// appear outside the handler.
const canary = "CANARY-4f9a1c7e-never-leave-the-worker"

// canaryRig is a full embedded host: SQLite control plane, in-process
// local launcher, worker, AWS KMS (local-kms) keys; engine and worker keep
// separate keepers, as separate processes would.
type canaryRig struct {
	dir        string
	cp         *sqlite.ControlPlane
	client     *sortie.Client
	logs       *logbuf.Buffer
	authorized atomic.Int32 // API calls that carried the canary
	mu         sync.Mutex
	invs       []*sortie.Invocation
	// keepers are the engine's and the worker's.
	hostKeeper, workerKeeper *envelope.Keeper
}

var canaryAgent = sortie.Manifest{Name: "canary", Runtime: "go:canary",
	Policy: sortie.Policy{HeartbeatMs: 100, LeaseMs: 2000, BackoffMs: 1, MaxAttempts: 3}}

func newCanaryRig(t *testing.T) *canaryRig {
	r := &canaryRig{dir: t.TempDir(), logs: &logbuf.Buffer{}}
	log := slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer "+canary {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.authorized.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(api.Close)
	cp, err := sqlite.Open(filepath.Join(r.dir, "sortie.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.cp = cp
	cache := &envelope.Options{Cache: &envelope.CacheOptions{}}
	hostKeeper := envelope.New(ring(t, "aws-a", awsKEK(t, localkms.ARN(localkms.KeyA))), cache)
	workerKeeper := envelope.New(ring(t, "aws-a", awsKEK(t, localkms.ARN(localkms.KeyA))), cache)
	r.hostKeeper, r.workerKeeper = hostKeeper, workerKeeper
	reg := functions.NewRegistry()
	reg.Register("canary", canaryHandler(api.URL))
	w := &functions.Worker{Registry: reg, Logger: log.With("side", "worker"),
		InlineConfig: &functions.InlineConfig{Opener: envelope.NewConfig(workerKeeper), Allow: []string{"API_TOKEN", "REGION"}}}
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		r.mu.Lock()
		r.invs = append(r.invs, inv)
		r.mu.Unlock()
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, "canary-worker"))
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := sortie.NewEngine(cp, l, sortie.Agents{"canary": canaryAgent},
		&sortie.EngineOptions{Sealer: envelope.NewConfig(hostKeeper), Logger: log.With("side", "engine")})
	ctx, stop := context.WithCancel(context.Background())
	go e.RunReconciler(ctx, 20*time.Millisecond)
	t.Cleanup(func() { stop(); e.Close(); cp.Close() })
	r.client = sortie.NewClient(e, &sortie.ClientOptions{PollInterval: 10 * time.Millisecond})
	return r
}

// canaryHandler calls the API with the configured token on every attempt;
// variable "fail_attempts" fails the first attempts (retryable), and
// "interrupt" pauses attempt 1 for input.
func canaryHandler(url string) functions.Handler {
	return func(ctx context.Context, call *functions.Call) (any, error) {
		var v struct {
			FailAttempts int  `json:"fail_attempts"`
			Interrupt    bool `json:"interrupt"`
		}
		if err := call.Variables(&v); err != nil {
			return nil, functions.Permanent(err)
		}
		cfg := call.Config()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+cfg["API_TOKEN"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("call the API: %w", err)
		}
		resp.Body.Close()
		call.Logger().Info("called the API", "status", resp.StatusCode, "variables", len(cfg))
		if err := call.Emit("api", "called the API", map[string]int{"status": resp.StatusCode}); err != nil {
			return nil, err
		}
		switch {
		case call.Attempt() <= v.FailAttempts:
			return nil, errors.New("the API asked to try again later")
		case v.Interrupt && call.Resume() == nil:
			return nil, functions.Interrupt(sortie.StateInputRequired, "which region?", map[string]int{"step": 1})
		}
		return map[string]any{"status": resp.StatusCode, "region": cfg["REGION"]}, nil
	}
}

func (r *canaryRig) submit(t *testing.T, config, vars string) (*sortie.Run, error) {
	t.Helper()
	req := &sortie.SubmitRequest{Agent: "canary", Config: json.RawMessage(config)}
	if vars != "" {
		req.Variables = json.RawMessage(vars)
	}
	return r.client.Submit(context.Background(), req)
}

func (r *canaryRig) wait(t *testing.T, id sortie.RunID) *sortie.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := r.client.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait(%s) = %v", id, err)
	}
	return run
}

// TestCanaryNeverLeaves runs a retried run, an interrupted and resumed
// run, a run whose configuration breaks the worker's allowlist and
// submissions with malformed configuration, all carrying the canary, and
// checks that it appears in no control-plane item (also the raw SQLite
// files), event, result, log line, invocation or error.
func TestCanaryNeverLeaves(t *testing.T) {
	r := newCanaryRig(t)
	ctx := context.Background()
	good := fmt.Sprintf(`{"API_TOKEN":%q,"REGION":"eu-west-1"}`, canary)
	var errs []string
	mustSubmit := func(config, vars string) sortie.RunID {
		run, err := r.submit(t, config, vars)
		if err != nil {
			t.Fatalf("Submit(config, %s) = %v", vars, err)
		}
		return run.ID
	}
	// The first run ends before the others start, so exactly one worker
	// Open finds the data-key cache cold.
	retried := mustSubmit(good, `{"fail_attempts":1}`)
	checkState(t, r.wait(t, retried), sortie.StateCompleted, 2)
	resumed := mustSubmit(good, `{"interrupt":true}`)
	denied := mustSubmit(fmt.Sprintf(`{"API_TOKEN":%q,"AWS_SECRET_ACCESS_KEY":%q}`, canary, canary), "")
	for _, bad := range []string{`{"API_TOKEN":["` + canary + `"]}`, `{"bad-name":"` + canary + `"}`,
		`["` + canary + `"]`, `{"API_TOKEN":"` + canary} {
		_, err := r.submit(t, bad, "")
		if !errors.Is(err, sortie.ErrInvalidArgument) {
			t.Errorf("Submit(malformed config) = %v, want sortie.ErrInvalidArgument", err)
		} else {
			errs = append(errs, err.Error())
		}
	}

	if run := r.wait(t, resumed); run.State != sortie.StateInputRequired {
		t.Fatalf("run %s is %s, want input-required", resumed, run.State)
	}
	if _, err := r.client.Resume(ctx, resumed, json.RawMessage(`{"answer":"eu"}`)); err != nil {
		t.Fatalf("Resume(%s) = %v", resumed, err)
	}
	checkState(t, r.wait(t, resumed), sortie.StateCompleted, 2)
	rejected := r.wait(t, denied)
	checkState(t, rejected, sortie.StateRejected, 1)
	if !strings.Contains(rejected.Reason, "AWS_SECRET_ACCESS_KEY") {
		t.Errorf("rejected run's reason %q does not name the variable outside the allowlist", rejected.Reason)
	}
	errs = append(errs, rejected.Reason)
	// The handler did get the secret: the API saw it on each of the four
	// attempts of the two runs that passed the allowlist.
	if n := r.authorized.Load(); n != 4 {
		t.Errorf("the API saw the canary token %d times, want 4", n)
	}
	r.checkKMSUsage(t, retried, resumed, denied)
	r.checkInvocations(t)
	for where, s := range r.haystacks(t, errs, retried, resumed, denied) {
		if strings.Contains(s, canary) {
			t.Errorf("the canary appears in %s", where)
		}
		if len(s) == 0 {
			t.Errorf("%s is empty: nothing was checked there", where)
		}
	}
}

func checkState(t *testing.T, run *sortie.Run, want sortie.State, attempts int) {
	t.Helper()
	if run.State != want || len(run.Attempts) != attempts {
		t.Fatalf("run %s is %s after %d attempts (error %+v), want %s after %d", run.ID, run.State, len(run.Attempts), run.Error, want, attempts)
	}
	if len(run.SealedConfig) == 0 {
		t.Errorf("run %s has no sealed configuration at rest", run.ID)
	}
}

// checkKMSUsage checks the KMS requests recorded on the attempts: every
// request the engine (its seals) and the workers (their opens) made, and
// with warm caches few: the worker's is cold once, so one Decrypt serves
// every attempt, and the engine's generates one data key per purpose.
func (r *canaryRig) checkKMSUsage(t *testing.T, ids ...sortie.RunID) {
	t.Helper()
	var total, attempts int64
	for _, id := range ids {
		run, err := r.client.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range run.Attempts {
			attempts++
			if a.Usage != nil {
				total += a.Usage.KMSRequests
			}
		}
	}
	host, worker := r.hostKeeper.Stats().KMSRequests(), r.workerKeeper.Stats().KMSRequests()
	if total != host+worker || worker != 1 {
		t.Errorf("attempts recorded %d KMS requests over %d attempts, want the engine's %d and the workers' %d (1: one cold data-key cache)",
			total, attempts, host, worker)
	}
}

// checkInvocations checks each invocation carried an attempt's envelope.
func (r *canaryRig) checkInvocations(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, inv := range r.invs {
		ctx, _ := fields(t, inv.SealedConfig)["ctx"].(map[string]any)
		if ctx["purpose"] != envelope.PurposeInvocation {
			t.Errorf("invocation of run %s attempt %d carries an envelope with context %v, want purpose %s",
				inv.RunID, inv.Attempt, ctx, envelope.PurposeInvocation)
		}
		if seen[string(inv.SealedConfig)] {
			t.Errorf("invocation of run %s attempt %d reuses another attempt's envelope", inv.RunID, inv.Attempt)
		}
		seen[string(inv.SealedConfig)] = true
	}
	if len(r.invs) != 5 {
		t.Errorf("the launcher started %d attempts, want 5", len(r.invs))
	}
}

// haystacks returns everything that left the worker, by where it is.
func (r *canaryRig) haystacks(t *testing.T, errs []string, ids ...sortie.RunID) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{"logs": r.logs.String(), "errors": strings.Join(errs, "\n")}
	for _, id := range ids {
		run, err := r.client.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := r.cp.Events(ctx, id, sortie.Cursor{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		out["run "+string(id)] = jsonString(t, run)
		out["result of "+string(id)] = string(run.Result) + string(jsonString(t, run.Error))
		out["events of "+string(id)] = jsonString(t, evs)
	}
	page, err := r.client.List(ctx, sortie.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	out["list"] = jsonString(t, page)
	r.mu.Lock()
	out["invocations"] = jsonString(t, r.invs)
	r.mu.Unlock()
	files, _ := filepath.Glob(filepath.Join(r.dir, "sortie.db*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out["file "+filepath.Base(f)] = string(b)
	}
	return out
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
