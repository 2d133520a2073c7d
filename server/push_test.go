package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/server/push"
	"github.com/sortie-run/sortie/wire"
)

// The dispatcher is the host's [server.PushKeys].
var _ server.PushKeys = (*push.Dispatcher)(nil)

func TestPushConfigRoutes(t *testing.T) {
	policy := destination.PublicHTTPS()
	r := newRig(t, &server.Options{CheckPushURL: policy.Check})
	ctx := context.Background()
	run := r.submit(t, `{"events": 0}`)
	put, err := r.remote.PutPushConfig(ctx, &sortie.PushConfig{RunID: run.ID, ID: "ops", URL: "https://hooks.example.com/a?token=x"})
	if err != nil || put.CreatedMs == 0 || put.URL != "https://hooks.example.com/a?token=x" {
		t.Fatalf("PutPushConfig over HTTP = %+v, %v", put, err)
	}
	got, err := r.remote.GetPushConfig(ctx, run.ID, "ops")
	if err != nil {
		t.Fatalf("GetPushConfig = %v", err)
	}
	if diff := cmp.Diff(put, got); diff != "" {
		t.Fatalf("get differs from put (-put +get):\n%s", diff)
	}
	list, err := r.remote.ListPushConfigs(ctx, run.ID)
	if err != nil || len(list) != 1 || list[0].ID != "ops" {
		t.Fatalf("ListPushConfigs = %+v, %v; want [ops]", list, err)
	}
	var ve *sortie.ValidationError
	for _, bad := range []string{"http://hooks.example.com/", "https://127.0.0.1/", "https://169.254.169.254/latest", "https://[::ffff:10.0.0.1]/", "ftp://x/"} {
		if _, err := r.remote.PutPushConfig(ctx, &sortie.PushConfig{RunID: run.ID, ID: "bad", URL: bad}); !errors.As(err, &ve) || ve.Field != "url" {
			t.Errorf("PutPushConfig(%s) = %v, want a ValidationError naming url", bad, err)
		}
	}
	if _, err := r.remote.GetPushConfig(ctx, run.ID, "bad"); !errors.Is(err, sortie.ErrNotFound) {
		t.Fatalf("a refused configuration was stored: Get = %v", err)
	}
	var eb wire.ErrorBody
	if code := post(t, r, "/v1/runs/"+run.ID.String()+"/cancel", `{"reason": "x", "force": true}`, nil, &eb); code != http.StatusBadRequest {
		t.Errorf("cancel with an unknown field = %d %+v, want 400", code, eb)
	}
	if code := post(t, r, "/v1/runs/"+run.ID.String()+"/resume", strings.Repeat(" ", 300<<10)+"{}", nil, &eb); code != http.StatusRequestEntityTooLarge {
		t.Errorf("resume over the size limit = %d %+v, want 413", code, eb)
	}
	if err := r.remote.DeletePushConfig(ctx, run.ID, "ops"); err != nil {
		t.Fatalf("DeletePushConfig = %v", err)
	}
	if err := r.remote.DeletePushConfig(ctx, run.ID, "ops"); !errors.Is(err, sortie.ErrNotFound) {
		t.Fatalf("second DeletePushConfig = %v, want ErrNotFound", err)
	}
	if _, err := r.remote.ListPushConfigs(ctx, sortie.NewRunID(time.Now())); !errors.Is(err, sortie.ErrNotFound) {
		t.Fatalf("ListPushConfigs(unknown run) = %v, want ErrNotFound", err)
	}
}

// TestReplacedPushConfigDeliversAgain: a configuration whose delivery gave
// up (its receiver failed) is set again with a working URL and gets the
// run's final state; a key ID the host lacks is refused when set.
func TestReplacedPushConfigDeliversAgain(t *testing.T) {
	secret, _ := sign.NewSecret()
	keys, err := push.SecretKeys("k1", map[string][]string{"k1": {secret}})
	if err != nil {
		t.Fatal(err)
	}
	policy := &destination.Policy{Allow: []string{"127.0.0.1"}, AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, AllowHTTP: true}
	client, _ := policy.Client()
	var d *push.Dispatcher
	r := newRig(t, &server.Options{CheckPushURL: policy.Check, Pushes: late{&d}})
	if d, err = push.New(r.cp.(sortie.PushStore), r.cp, client, keys, &push.Options{MaxFailures: 1, SweepInterval: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go d.Run(ctx)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	defer failing.Close()
	var delivered atomic.Int32
	working := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { delivered.Add(1) }))
	defer working.Close()

	run := r.submit(t, `{"events": 0}`)
	r.final(t, run.ID)
	if _, err := r.remote.PutPushConfig(ctx, &sortie.PushConfig{RunID: run.ID, ID: "ops", URL: failing.URL, KeyID: "nokey"}); !isField(err, "key_id") {
		t.Fatalf("PutPushConfig(key_id nokey) = %v, want a ValidationError naming key_id", err)
	}
	if _, err := r.remote.PutPushConfig(ctx, &sortie.PushConfig{RunID: run.ID, ID: "ops", URL: failing.URL}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "delivery to the failing receiver to give up", 10*time.Second, func() bool {
		cfg, err := r.remote.GetPushConfig(ctx, run.ID, "ops")
		return err == nil && cfg.Delivery.Done && cfg.Delivery.LastError != ""
	})
	cfg, err := r.remote.PutPushConfig(ctx, &sortie.PushConfig{RunID: run.ID, ID: "ops", URL: working.URL})
	if err != nil || cfg.Delivery.Done || cfg.Delivery.LastError != "" {
		t.Fatalf("replacing the configuration = %+v, %v; want its delivery restarted", cfg, err)
	}
	testwait.Until(t, "the final state delivered to the new URL", 10*time.Second, func() bool { return delivered.Load() > 0 })
}

// late is a dispatcher made after the server that refers to it.
type late struct{ d **push.Dispatcher }

func (l late) Notify(id sortie.RunID) { (*l.d).Notify(id) }
func (l late) HasKey(id string) bool  { return (*l.d).HasKey(id) }

func isField(err error, field string) bool {
	var ve *sortie.ValidationError
	return errors.As(err, &ve) && ve.Field == field
}
