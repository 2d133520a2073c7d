package host_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/pricing"
	"github.com/sortie-run/sortie/server/httpengine"
)

// A served host delivers a run's push webhooks signed with the key it
// created in the state directory, through its destination policy: a URL
// the policy refuses is refused when it is set. The webhook's run carries
// its cost, priced with the host's table.
func TestServeDeliversSignedWebhooks(t *testing.T) {
	dir := t.TempDir()
	policy := &destination.Policy{Allow: []string{"127.0.0.1"}, AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, AllowHTTP: true}
	prices, err := pricing.Default().Set("local.second", "1")
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, host.Config{StateDir: dir, InProcess: true, Destinations: policy, Prices: prices}, nil)
	var keys struct {
		Primary string              `json:"primary"`
		Keys    map[string][]string `json:"keys"`
	}
	b, err := os.ReadFile(filepath.Join(dir, host.WebhookKeysFile))
	if err != nil || json.Unmarshal(b, &keys) != nil {
		t.Fatalf("%s in the state directory: %v %s", host.WebhookKeysFile, err, b)
	}
	v, err := sign.NewVerifier(keys.Keys[keys.Primary], nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan sortie.Run, 16)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := v.VerifyRequest(r, 1<<20)
		if err != nil {
			t.Errorf("webhook signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var p struct{ Data struct{ Run sortie.Run } }
		json.Unmarshal(body, &p)
		got <- p.Data.Run
	}))
	defer recv.Close()
	run := probe(t, s.client, `{"events": 0, "sleep_ms": 300}`)
	remote, _ := httpengine.New(s.url, &httpengine.Options{Token: testToken})
	if _, err := remote.PutPushConfig(t.Context(), &sortie.PushConfig{RunID: run.ID, ID: "hook", URL: recv.URL + "/hook"}); err != nil {
		t.Fatalf("PutPushConfig(%s) = %v", recv.URL, err)
	}
	_, err = remote.PutPushConfig(t.Context(), &sortie.PushConfig{RunID: run.ID, ID: "meta", URL: "http://169.254.169.254/latest"})
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "url" {
		t.Fatalf("PutPushConfig(the metadata address) = %v, want a *sortie.ValidationError naming url", err)
	}
	deadline := time.After(waitLong)
	for {
		select {
		case r := <-got:
			if r.ID != run.ID {
				t.Fatalf("webhook for run %s, want %s", r.ID, run.ID)
			}
			if r.State == sortie.StateCompleted {
				if r.Cost == nil || r.Cost.TotalNanoUSD < 300_000_000 || r.Cost.PriceVersion != "2026-12-02+set" {
					t.Errorf("webhook run cost %+v, want ≥ 300 ms × $1/s = 300,000,000 n$ priced 2026-12-02+set", r.Cost)
				}
				return
			}
		case <-deadline:
			t.Fatal("no signed webhook with the completed run within 30 s")
		}
	}
}

// With WorkerCallbacks the host's in-process workers report over signed
// HTTP callbacks to CallbackURL (here the host's Handler on a server of
// the test's own) instead of writing the control plane; the keys file is
// created with mode 0600.
func TestWorkerCallbacks(t *testing.T) {
	ln := listen(t)
	base := "http://" + ln.Addr().String()
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true,
		API: &host.API{Tokens: []string{testToken}, WorkerCallbacks: true, CallbackURL: base}})
	var callbacks atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/worker/") {
			callbacks.Add(1)
		}
		h.Handler().ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	if !strings.HasPrefix(h.CallbackURL(), base+"/") {
		t.Fatalf("CallbackURL() = %q, want it under %s", h.CallbackURL(), base)
	}
	run := probe(t, h.Client(), `{"events": 3}`)
	if run = wait(t, h.Client(), run.ID); run.State != sortie.StateCompleted {
		t.Fatalf("run over callbacks = %s (%+v), want completed", run.State, run.Error)
	}
	if n := callbacks.Load(); n < 3 {
		t.Errorf("%d callback requests for a run with 3 events, want its claim, events and finish as callbacks", n)
	}
	info, err := os.Stat(filepath.Join(h.StateDir(), host.CallbackKeysFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("Stat(%s) = %v, %v; want mode 0600", host.CallbackKeysFile, info, err)
	}
}
