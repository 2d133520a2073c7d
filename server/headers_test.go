package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/wire"
)

// Authorization (in either order of a valid and a wrong token),
// Content-Type, Last-Event-ID and Idempotency-Key given twice are each
// refused 400 naming the header, before authentication decides, and
// nothing is stored; one of each is served.
func TestHeadersGivenTwiceAreRefused(t *testing.T) {
	token := "a-long-enough-api-token"
	r := newRig(t, &server.Options{APITokens: []string{token}})
	run := r.submit(t, `{"events": 0}`)
	r.final(t, run.ID)
	before := r.countRuns(t)
	bearer := "Bearer " + token
	submit := `{"agent": "probe", "variables": {"events": 0}}`
	for _, c := range []struct {
		name, method, path, header string
		values                     []string
	}{
		{"valid then wrong token", http.MethodPost, "/v1/runs", "Authorization", []string{bearer, "Bearer wrong"}},
		{"wrong then valid token", http.MethodPost, "/v1/runs", "Authorization", []string{"Bearer wrong", bearer}},
		{"Content-Type", http.MethodPost, "/v1/runs", "Content-Type", []string{"application/json", "text/plain"}},
		{"Last-Event-ID", http.MethodGet, "/v1/runs/" + run.ID.String() + "/events", "Last-Event-ID", []string{"1.1", "1.2"}},
		{"Idempotency-Key", http.MethodPost, "/v1/runs", "Idempotency-Key", []string{"a", "b"}},
	} {
		req, _ := http.NewRequest(c.method, r.http.URL+c.path, strings.NewReader(submit))
		if c.header != "Authorization" {
			req.Header.Set("Authorization", bearer)
		}
		for _, v := range c.values {
			req.Header.Add(c.header, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var eb wire.ErrorBody
		derr := json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if derr != nil || resp.StatusCode != http.StatusBadRequest || eb.Error.Code != wire.CodeInvalidArgument ||
			eb.Error.Field != c.header || !strings.Contains(eb.Error.Message, "given 2 times") {
			t.Errorf("%s: %s %s = %d %+v (%v), want 400 naming %s", c.name, c.method, c.path, resp.StatusCode, eb, derr, c.header)
		}
	}
	if n := r.countRuns(t); n != before {
		t.Errorf("%d runs stored after refused requests, want %d", n, before)
	}
	if got := post(t, r, "/v1/runs", submit, map[string]string{"Authorization": bearer, "Idempotency-Key": "once"}, nil); got != http.StatusCreated {
		t.Errorf("submit with each header once = %d, want 201", got)
	}
}
