package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/server"
)

func TestPushConfigRoutes(t *testing.T) {
	policy := &destination.Policy{}
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
	var eb server.ErrorBody
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
