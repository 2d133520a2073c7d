package lambda_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/launchers/lambda"
)

// recorder keeps every invocation payload the engine starts.
type recorder struct {
	inner sortie.Launcher
	sent  [][]byte
}

func (r *recorder) Start(ctx context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	b, _ := json.Marshal(inv)
	r.sent = append(r.sent, b) // Start calls are serialised by the inner launcher's caller
	return r.inner.Start(ctx, inv)
}

// Sealed configuration reaches the worker through KMS (the attempt made a
// KMS request and a name outside the allowlist is refused, which only an
// opened configuration can tell), and the canary secret is in no
// invocation payload, stored run, event or log line.
func TestSealedConfigCanary(t *testing.T) {
	table, cp := newTable(t)
	r := startRIE(t, 60, fnEnv(table))
	rec := &recorder{inner: &serial{l: newLauncher(t, r, lambda.Options{})}}
	e := newEngine(t, cp, rec)
	b := make([]byte, 12)
	rand.Read(b)
	canary := "canary-" + hex.EncodeToString(b)

	ok := submit(t, e, map[string]any{"events": 1, "output": "configured"}, sortie.Policy{}, json.RawMessage(`{"API_TOKEN":"`+canary+`"}`))
	ok = waitRun(t, cp, ok.ID, "the configured run to settle", settled)
	if ok.State != sortie.StateCompleted {
		t.Fatalf("configured run = %s reason %q, want completed", ok.State, ok.Reason)
	}
	if u := ok.Current().Usage; u == nil || u.KMSRequests < 1 {
		t.Errorf("configured run's attempt Usage = %+v, want KMSRequests ≥ 1 (the worker opened it through KMS)", u)
	}
	denied := submit(t, e, map[string]any{"events": 1}, sortie.Policy{}, json.RawMessage(`{"OTHER_TOKEN":"`+canary+`"}`))
	denied = waitRun(t, cp, denied.ID, "the denied run to settle", settled)
	if denied.State != sortie.StateRejected || !strings.Contains(denied.Reason, "OTHER_TOKEN") {
		t.Errorf("run with OTHER_TOKEN = %s reason %q, want rejected naming OTHER_TOKEN", denied.State, denied.Reason)
	}

	var places []string
	for i, p := range rec.sent {
		places = append(places, fmt.Sprintf("invocation %d: %s", i+1, p))
	}
	for _, id := range []sortie.RunID{ok.ID, denied.ID} {
		run, _ := cp.Get(context.Background(), id)
		rb, _ := json.Marshal(run)
		evs, _ := cp.Events(context.Background(), id, sortie.Cursor{}, 100)
		eb, _ := json.Marshal(evs)
		places = append(places, "run "+string(rb), "events "+string(eb))
	}
	places = append(places, "function logs "+r.Output())
	for _, p := range places {
		if strings.Contains(p, canary) || strings.Contains(p, hex.EncodeToString([]byte(canary))) {
			t.Errorf("the canary secret leaked into %.120s…", p)
		}
	}
	if len(rec.sent) != 2 {
		t.Errorf("the engine started %d invocations, want 2", len(rec.sent))
	}
}
