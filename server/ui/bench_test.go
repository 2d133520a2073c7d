package ui_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The UI's forwarding against the API called directly, over loopback HTTP:
// GET of one run with the session cookie through /ui/api, and with the
// bearer token at /v1.
func BenchmarkGetRun(b *testing.B) {
	r := newRig(b, token)
	run := r.submit(b, `{"events":1}`)
	c := r.client(b)
	resp, err := c.Post(r.ui+"session", "application/json", strings.NewReader(`{"token":"`+token+`"}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("login = %v, %v", resp, err)
	}
	resp.Body.Close()
	for _, bc := range []struct {
		name, url, auth string
	}{
		{"api", r.http.URL + "/v1/runs/" + string(run.ID), "Bearer " + token},
		{"ui", r.ui + "api/v1/runs/" + string(run.ID), ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, bc.url, nil)
				if bc.auth != "" {
					req.Header.Set("Authorization", bc.auth)
				}
				resp, err := c.Do(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s = %v, %v", bc.url, resp, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
