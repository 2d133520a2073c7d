package callback_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/server/callback"
)

// A run completes with every worker message sent over HTTPS callbacks:
// the claim, the events, the heartbeats and the result are stored, and
// neither the token nor its secret is stored anywhere.
func TestRunCompletesThroughCallbacks(t *testing.T) {
	var tokens = make(chan string, 1)
	h := newHost(t, func(ctx context.Context, inv *sortie.Invocation) error {
		tokens <- inv.Report.Token
		return callbackWorker(ctx, inv)
	})
	run, err := h.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe",
		Variables: json.RawMessage(`{"events":5,"sleep_ms":150}`)})
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if run, err = h.client.Wait(ctx, run.ID); err != nil {
		t.Fatalf("Wait(%s) = %v", run.ID, err)
	}
	if run.State != sortie.StateCompleted || string(run.Result) != `{"attempt":1,"events":5}` {
		t.Fatalf("run = %s %s (%v), want completed {\"attempt\":1,\"events\":5}", run.State, run.Result, run.Error)
	}
	if cur := run.Current(); cur.Owner != callback.Owner || cur.Usage == nil || cur.Usage.DurationMs <= 0 {
		t.Errorf("attempt 1 = owner %q usage %+v, want owner %q and the worker's usage", cur.Owner, cur.Usage, callback.Owner)
	}
	st := h.stored(t, run.ID)
	var got []string
	for _, e := range st.Events {
		got = append(got, e.Cursor().String()+" "+e.Kind)
	}
	want := []string{"1.1 progress", "1.2 progress", "1.3 progress", "1.4 progress", "1.5 progress"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events stored through callbacks (-want +got):\n%s", diff)
	}
	token := <-tokens
	_, secret := split(t, token)
	all, _ := json.Marshal(st)
	for what, s := range map[string]string{"token": token, "secret (base64url)": base64.RawURLEncoding.EncodeToString(secret),
		"secret (base64)": base64.StdEncoding.EncodeToString(secret)} {
		if strings.Contains(string(all), s) || strings.Contains(h.logs.String(), s) {
			t.Errorf("the %s appears in the stored run, its events or the host's logs", what)
		}
	}
}

// A cancel reaches the worker through a heartbeat's cancel_requested.
func TestCancelReachesWorkerThroughHeartbeat(t *testing.T) {
	h := newHost(t, callbackWorker)
	run, err := h.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe",
		Variables: json.RawMessage(`{"events":0,"until_cancelled":true,"interval_ms":10}`)})
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	testwait.UntilReport(t, "a tick event stored through the callback", 10*time.Second, func() (bool, string) {
		st := h.stored(t, run.ID)
		return len(st.Events) > 0, string(st.Run.State)
	})
	// The control plane's flag only: the launcher is not asked to stop the
	// attempt, so only a heartbeat can tell the worker.
	if _, err := h.cp.RequestCancel(context.Background(), run.ID, "test"); err != nil {
		t.Fatalf("RequestCancel = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if run, err = h.client.Wait(ctx, run.ID); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	if cur := run.Current(); run.State != sortie.StateCancelled || cur.Error == nil || cur.Error.Type != sortie.ErrorTypeCancelled || cur.Usage == nil {
		t.Errorf("run after Cancel = %s, attempt 1 error %+v usage %+v; want cancelled, with error type %q and usage reported by the worker",
			run.State, cur.Error, cur.Usage, sortie.ErrorTypeCancelled)
	}
}

// The reporter's errors are the control-plane reporter's sentinels: a
// duplicate delivery's claim is a conflict, a claim of a cancelled run is
// terminal, and a finish of another attempt's launch is a conflict.
func TestReporterErrorsMapToSentinels(t *testing.T) {
	h := newHost(t, nil)
	ctx := context.Background()
	inv := h.launch(t)
	first := mustReporter(t, inv)
	if err := first.Claim(ctx); err != nil {
		t.Fatalf("Claim = %v, want nil", err)
	}
	if err := mustReporter(t, inv).Claim(ctx); !errors.Is(err, sortie.ErrConflict) {
		t.Errorf("second Claim (duplicate delivery) = %v, want ErrConflict", err)
	}
	if cancelRequested, err := first.Heartbeat(ctx); err != nil || cancelRequested {
		t.Errorf("Heartbeat = %v, %v; want false, nil", cancelRequested, err)
	}
	if _, err := h.client.Cancel(ctx, inv.RunID, "test"); err != nil {
		t.Fatal(err)
	}
	if cancelRequested, err := first.Heartbeat(ctx); err != nil || !cancelRequested {
		t.Errorf("Heartbeat after Cancel = %v, %v; want true, nil", cancelRequested, err)
	}
	err := first.Events(ctx, []sortie.Event{{Seq: 2, Kind: "progress"}})
	if !errors.Is(err, sortie.ErrConflict) {
		t.Errorf("Events(seq 2 with no seq 1) = %v, want ErrConflict", err)
	}
	if err := first.Finish(ctx, sortie.Outcome{Error: &sortie.ErrorMessage{Type: sortie.ErrorTypeCancelled, Message: "stopped"}}); err != nil {
		t.Fatalf("Finish = %v", err)
	}

	next := h.launch(t)
	if _, err := h.client.Cancel(ctx, next.RunID, "before the claim"); err != nil {
		t.Fatal(err)
	}
	if err := mustReporter(t, next).Claim(ctx); !errors.Is(err, sortie.ErrTerminal) {
		t.Errorf("Claim of a run cancelled before its claim = %v, want ErrTerminal", err)
	}
	if err := mustReporter(t, next).Finish(ctx, sortie.Outcome{Result: json.RawMessage(`1`)}); err != nil {
		t.Errorf("Finish of a run already ended = %v, want nil (the first finish won)", err)
	}
}

// Key rotation: a token issued under the old primary verifies after a new
// primary is set, new tokens name the new key, and once the old key is
// removed its tokens are refused naming the key ID.
func TestKeyRotation(t *testing.T) {
	h := newHost(t, nil)
	inv := h.launch(t)
	claims, _ := split(t, inv.Report.Token)
	if c, err := callback.ParseClaims(claims); err != nil || c.KeyID != "k1" {
		t.Fatalf("ParseClaims(token) = %+v, %v; want key ID k1", c, err)
	}
	k2, err := callback.NewKey("k2")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.keys.Add(k2); err != nil {
		t.Fatal(err)
	}
	if err := h.keys.SetPrimary("k2"); err != nil {
		t.Fatal(err)
	}
	if err := mustReporter(t, inv).Claim(context.Background()); err != nil {
		t.Fatalf("Claim with a token of the old primary after rotation = %v, want nil", err)
	}
	rep, err := h.issuer.IssueReport(inv)
	if err != nil {
		t.Fatal(err)
	}
	newClaims, _ := split(t, rep.Token)
	if c, _ := callback.ParseClaims(newClaims); c.KeyID != "k2" {
		t.Errorf("token issued after rotation names key %q, want k2", c.KeyID)
	}
	if err := h.keys.Remove("k1"); err != nil {
		t.Fatal(err)
	}
	before := h.stored(t, inv.RunID)
	_, err = mustReporter(t, inv).Heartbeat(context.Background())
	if !errors.Is(err, functions.ErrCallbackAuth) || !strings.Contains(err.Error(), `"k1"`) {
		t.Errorf("Heartbeat with a token of a removed key = %v, want ErrCallbackAuth naming key ID \"k1\"", err)
	}
	if diff := cmp.Diff(before, h.stored(t, inv.RunID)); diff != "" {
		t.Errorf("a refused heartbeat changed the store (-before +after):\n%s", diff)
	}
}

// A claim states the worker's compute shape and the host stores it on the
// attempt; the reporter sends only the shape's fields. A shape the host
// refuses comes back as a validation error naming the field, and nothing
// is stored.
func TestClaimStatesTheShape(t *testing.T) {
	h := newHost(t, nil)
	ctx := context.Background()
	inv := h.launch(t)
	before := h.stored(t, inv.RunID)
	bad := functions.WithClaimShape(mustReporter(t, inv), &sortie.Usage{MemoryMB: 128, Arch: "sparc"})
	var ve *sortie.ValidationError
	if err := bad.Claim(ctx); !errors.As(err, &ve) || ve.Field != "usage.arch" {
		t.Fatalf("Claim(arch sparc) = %v, want a validation error naming usage.arch", err)
	}
	if diff := cmp.Diff(before, h.stored(t, inv.RunID)); diff != "" {
		t.Fatalf("a refused claim changed the store (-before +after):\n%s", diff)
	}
	rep := functions.WithClaimShape(mustReporter(t, inv), &sortie.Usage{MemoryMB: 128, Arch: "arm64", DurationMs: 5, Requests: 1})
	if err := rep.Claim(ctx); err != nil {
		t.Fatalf("Claim(128 MB arm64) = %v, want nil", err)
	}
	a := h.stored(t, inv.RunID).Run.Current()
	if !a.Claimed() || a.Usage == nil || *a.Usage.Shape() != (sortie.Usage{MemoryMB: 128, Arch: "arm64"}) || a.Usage.DurationMs != 0 || a.Usage.Requests != 0 {
		t.Errorf("claimed attempt usage %+v, want memory 128 MB and arch arm64 only (the shape)", a.Usage)
	}
}

func mustReporter(t *testing.T, inv *sortie.Invocation) functions.Reporter {
	t.Helper()
	rep, err := functions.NewCallbackReporter(inv, &http.Client{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("NewCallbackReporter = %v", err)
	}
	return rep
}
