package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/wire"
)

// del sends DELETE path with the bearer token (none when empty) and
// returns the status and the error body of a refusal.
func del(t *testing.T, r *rig, path, token string) (int, wire.ErrorBody) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, r.http.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("DELETE %s: %v", path, err)
	}
	defer resp.Body.Close()
	var eb wire.ErrorBody
	if resp.StatusCode != http.StatusNoContent {
		json.NewDecoder(resp.Body).Decode(&eb)
	}
	return resp.StatusCode, eb
}

// DELETE /v1/runs/{id}: 401 without the token, 409 naming the state for
// an interrupted (live) run, which stays, 204 for a completed run, whose
// events go with it, then 404; the Go client's Delete maps the same.
func TestDeleteRun(t *testing.T) {
	token := "a-long-enough-api-token"
	r := newRig(t, &server.Options{APITokens: []string{token}})
	ctx := context.Background()
	done := r.submit(t, `{"events": 2}`)
	r.final(t, done.ID)
	waiting := r.submit(t, `{"interrupt": "input-required"}`)
	if got := r.final(t, waiting.ID); got.State != sortie.StateInputRequired {
		t.Fatalf("probe run with interrupt = %s, want input-required", got.State)
	}
	path := func(id sortie.RunID) string { return "/v1/runs/" + id.String() }

	if code, eb := del(t, r, path(done.ID), ""); code != http.StatusUnauthorized || eb.Error.Code != wire.CodeUnauthenticated {
		t.Errorf("DELETE without the token = %d %+v, want 401 unauthenticated", code, eb)
	}
	code, eb := del(t, r, path(waiting.ID), token)
	if code != http.StatusConflict || eb.Error.Code != wire.CodeConflict || !strings.Contains(eb.Error.Message, "input-required") {
		t.Errorf("DELETE an input-required run = %d %+v, want 409 conflict naming the state", code, eb)
	}
	if _, err := r.client.Get(ctx, waiting.ID); err != nil {
		t.Errorf("Get(the run DELETE refused) = %v, want it kept", err)
	}
	if err := r.client.Delete(ctx, waiting.ID); !errors.Is(err, sortie.ErrConflict) || !strings.Contains(err.Error(), "cancel it first") {
		t.Errorf("Client.Delete(input-required run) = %v, want ErrConflict saying to cancel first", err)
	}

	if code, eb := del(t, r, path(done.ID), token); code != http.StatusNoContent {
		t.Fatalf("DELETE a completed run = %d %+v, want 204", code, eb)
	}
	if _, err := r.client.Get(ctx, done.ID); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get after DELETE = %v, want ErrNotFound", err)
	}
	if _, err := r.cp.Events(ctx, done.ID, sortie.Cursor{}, 10); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Events after DELETE = %v, want ErrNotFound", err)
	}
	if code, eb := del(t, r, path(done.ID), token); code != http.StatusNotFound || eb.Error.Code != wire.CodeNotFound {
		t.Errorf("DELETE again = %d %+v, want 404 not_found", code, eb)
	}
	if code, eb := del(t, r, "/v1/runs/not-a-run-id", token); code != http.StatusBadRequest || eb.Error.Field != "run_id" {
		t.Errorf("DELETE a malformed ID = %d %+v, want 400 naming run_id", code, eb)
	}

	if _, err := r.client.Cancel(ctx, waiting.ID, "done waiting"); err != nil {
		t.Fatalf("Cancel(input-required run) = %v", err)
	}
	if err := r.client.Delete(ctx, waiting.ID); err != nil {
		t.Fatalf("Client.Delete(cancelled run) = %v, want success", err)
	}
	if err := r.client.Delete(ctx, waiting.ID); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Client.Delete again = %v, want ErrNotFound", err)
	}
}
