package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/server/httpengine"
	"github.com/sortie-run/sortie/wire"
)

// post sends body to path and decodes the answer into out (if not nil).
func post(t *testing.T, r *rig, path, body string, hdr map[string]string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.http.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	if out != nil {
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("POST %s: decode %q: %v", path, b, err)
		}
	}
	return resp.StatusCode
}

func (r *rig) countRuns(t *testing.T) int {
	t.Helper()
	page, err := r.cp.List(context.Background(), sortie.ListQuery{PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Runs)
}

func TestSubmitIdempotencyKeyHeader(t *testing.T) {
	r := newRig(t, nil)
	key := map[string]string{"Idempotency-Key": "order-42"}
	var first, again sortie.Run
	if got := post(t, r, "/v1/runs", `{"agent": "probe", "variables": {"events": 0}}`, key, &first); got != http.StatusCreated {
		t.Fatalf("first submit = %d, want 201", got)
	}
	if got := post(t, r, "/v1/runs", `{"agent": "probe", "variables": {"events": 0}}`, key, &again); got != http.StatusOK || again.ID != first.ID {
		t.Fatalf("resubmit = %d run %s, want 200 and run %s", got, again.ID, first.ID)
	}
	var eb wire.ErrorBody
	if got := post(t, r, "/v1/runs", `{"agent": "probe", "variables": {"events": 1}}`, key, &eb); got != http.StatusConflict || eb.Error.Code != wire.CodeIdempotencyConflict {
		t.Fatalf("same key, other request = %d %+v, want 409 idempotency_conflict", got, eb)
	}
	if got := post(t, r, "/v1/runs", `{"agent": "probe", "idempotency_key": "other"}`, key, &eb); got != http.StatusBadRequest || eb.Error.Field != "idempotency_key" {
		t.Fatalf("header and body keys differ = %d %+v, want 400 naming idempotency_key", got, eb)
	}
	req, _ := http.NewRequest(http.MethodPost, r.http.URL+"/v1/runs", strings.NewReader(`{"agent": "probe", "variables": {"events": 0}}`))
	req.Header.Add("Idempotency-Key", "a")
	req.Header.Add("Idempotency-Key", "b")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	eb = wire.ErrorBody{}
	if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil || resp.StatusCode != http.StatusBadRequest ||
		eb.Error.Code != wire.CodeInvalidArgument || eb.Error.Field != "Idempotency-Key" || !strings.Contains(eb.Error.Message, "2 times") {
		t.Fatalf("two Idempotency-Key headers = %d %+v (%v), want 400 invalid_argument naming Idempotency-Key", resp.StatusCode, eb, err)
	}
	if n := r.countRuns(t); n != 1 {
		t.Fatalf("%d runs stored, want 1", n)
	}
}

func TestBadBodiesAreRefusedAndStoreNothing(t *testing.T) {
	r := newRig(t, nil)
	big := `{"agent": "probe", "variables": {"x": "` + strings.Repeat("a", 400<<10) + `"}}`
	cases := []struct {
		name, body string
		status     int
		field      string
	}{
		{"malformed", `{"agent": "probe"`, 400, "body"},
		{"not an object", `[1, 2]`, 400, "body"},
		{"unknown field", `{"agent": "probe", "colour": "red"}`, 400, "colour"},
		{"unknown nested field", `{"agent": "probe", "policy": {"retries": 3}}`, 400, "policy.retries"},
		{"missing agent", `{"variables": {}}`, 400, "agent"},
		{"variables not an object", `{"agent": "probe", "variables": [1]}`, 400, "variables"},
		{"label too long", `{"agent": "probe", "labels": {"team": "` + strings.Repeat("x", 300) + `"}}`, 400, "labels.team"},
		{"policy type", `{"agent": "probe", "policy": {"max_attempts": "three"}}`, 400, "policy.max_attempts"},
		{"policy over int64", `{"agent": "probe", "policy": {"heartbeat_ms": 1e20}}`, 400, "policy.heartbeat_ms"},
		{"heartbeat under the minimum", `{"agent": "probe", "policy": {"heartbeat_ms": 5, "lease_ms": 3000}}`, 400, "policy.heartbeat_ms"},
		{"variables not UTF-8", "{\"agent\": \"probe\", \"variables\": {\"t\": \"\xff\"}}", 400, "body"},
		{"context ID not UTF-8", "{\"agent\": \"probe\", \"context_id\": \"a\xffb\"}", 400, "body"},
		{"oversize", big, 413, "body"},
		{"unknown agent", `{"agent": "nope"}`, 400, "agent"},
		{"bad agent name", `{"agent": "No Such"}`, 400, "agent"},
		{"agent twice", `{"agent": "probe", "agent": "textstats"}`, 400, "body"},
		{"variable twice", `{"agent": "probe", "variables": {"top": "many", "top": 5}}`, 400, "variables"},
		{"nested key twice", `{"agent": "probe", "variables": {"a": [{"b": 1, "\u0062": 2}]}}`, 400, "variables.a[0]"},
		{"deep body", strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000), 400, "body"},
	}
	for _, c := range cases {
		var eb wire.ErrorBody
		got := post(t, r, "/v1/runs", c.body, nil, &eb)
		if got != c.status || eb.Error.Field != c.field || eb.Error.Message == "" {
			t.Errorf("%s: POST /v1/runs = %d %+v, want %d naming field %q", c.name, got, eb, c.status, c.field)
		}
	}
	if n := r.countRuns(t); n != 0 {
		t.Fatalf("%d runs stored after refused submissions, want 0", n)
	}
}

func TestHTTPErrorsMapToSentinels(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	missing := sortie.NewRunID(time.Now())
	if _, err := r.client.Get(ctx, missing); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get(unknown) over HTTP = %v, want ErrNotFound", err)
	}
	if _, err := r.client.Cancel(ctx, missing, "x"); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Cancel(unknown) over HTTP = %v, want ErrNotFound", err)
	}
	_, err := r.client.Submit(ctx, &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`[1]`)})
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "variables" {
		t.Errorf("Submit(variables [1]) over HTTP = %v, want a ValidationError naming variables", err)
	}
	run := r.submit(t, `{"events": 0}`)
	r.final(t, run.ID)
	if _, err := r.client.Resume(ctx, run.ID, json.RawMessage(`{}`)); !errors.Is(err, sortie.ErrTerminal) && !errors.Is(err, sortie.ErrConflict) {
		t.Errorf("Resume(completed run) over HTTP = %v, want ErrTerminal or ErrConflict", err)
	}
	if _, err := r.client.Get(ctx, "not-a-run-id"); !errors.As(err, &ve) {
		t.Errorf("Get(not-a-run-id) = %v, want a ValidationError", err)
	}
	page, err := r.client.List(ctx, sortie.ListQuery{Agent: "probe", State: sortie.StateCompleted})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].ID != run.ID {
		t.Errorf("List(probe, completed) over HTTP = %+v, %v; want run %s", page, err, run.ID)
	}
	if _, err := r.client.List(ctx, sortie.ListQuery{State: "sleeping"}); !errors.As(err, &ve) || ve.Field != "state" {
		t.Errorf("List(state sleeping) = %v, want a ValidationError naming state", err)
	}
}

func TestListPagesOverHTTP(t *testing.T) {
	r := newRig(t, nil)
	want := map[sortie.RunID]bool{}
	for range 7 {
		want[r.submit(t, `{"events": 0}`).ID] = true
	}
	got := map[sortie.RunID]bool{}
	q := sortie.ListQuery{PageSize: 3}
	for pages := 1; ; pages++ {
		page, err := r.client.List(context.Background(), q)
		if err != nil {
			t.Fatalf("List page %d = %v", pages, err)
		}
		for _, run := range page.Runs {
			if got[run.ID] {
				t.Fatalf("run %s listed twice", run.ID)
			}
			got[run.ID] = true
		}
		if page.NextPageToken == "" {
			if pages != 3 {
				t.Fatalf("%d pages of 3 for 7 runs, want 3", pages)
			}
			break
		}
		q.PageToken = page.NextPageToken
	}
	if len(got) != len(want) {
		t.Fatalf("listed %d runs, want %d", len(got), len(want))
	}
}

func TestAPITokens(t *testing.T) {
	token := "a-long-enough-api-token"
	r := newRig(t, &server.Options{APITokens: []string{token}})
	if got := post(t, r, "/v1/runs", `{"agent": "probe", "variables": {"events": 0}}`, map[string]string{"Authorization": "bearer " + token}, nil); got != http.StatusCreated {
		t.Errorf("submit with the scheme in lower case = %d, want 201 (auth schemes are case-insensitive)", got)
	}
	before := r.countRuns(t)
	for _, hdr := range []map[string]string{nil, {"Authorization": "Bearer wrong-token-of-some-length"}, {"Authorization": token}} {
		var eb wire.ErrorBody
		if got := post(t, r, "/v1/runs", `{"agent": "probe"}`, hdr, &eb); got != http.StatusUnauthorized || eb.Error.Code != wire.CodeUnauthenticated {
			t.Errorf("submit with %v = %d %+v, want 401 unauthenticated", hdr, got, eb)
		}
	}
	if n := r.countRuns(t); n != before {
		t.Fatalf("%d runs stored after unauthenticated requests, want %d", n, before)
	}
	run := r.submit(t, `{"events": 0}`) // the rig's client carries the token
	if got := post(t, r, "/v1/runs/"+run.ID.String()+"/cancel", `{}`, map[string]string{"Authorization": "Bearer " + token}, nil); got != http.StatusOK {
		t.Fatalf("cancel with the token = %d, want 200", got)
	}
	bad, _ := httpengine.New(r.http.URL, &httpengine.Options{Token: "wrong-token-of-some-length"})
	if _, err := bad.Get(context.Background(), run.ID); !errors.Is(err, httpengine.ErrUnauthenticated) {
		t.Fatalf("Get with a wrong token = %v, want ErrUnauthenticated", err)
	}
	if _, err := server.New(server.Options{Engine: r.engine, APITokens: []string{"short"}}); err == nil {
		t.Fatal("server.New accepted a 5-byte API token")
	}
}

func TestQueryAndPathChecks(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"events": 1}`)
	r.final(t, run.ID)
	get := func(path string, hdr map[string]string) (int, wire.ErrorBody) {
		req, _ := http.NewRequest(http.MethodGet, r.http.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var eb wire.ErrorBody
		json.NewDecoder(resp.Body).Decode(&eb)
		return resp.StatusCode, eb
	}
	events := "/v1/runs/" + run.ID.String() + "/events"
	for _, tc := range []struct {
		path   string
		hdr    map[string]string
		status int
		field  string
	}{
		{"/v1/runs?stat=completed", nil, 400, "stat"},
		{"/v1/runs/" + run.ID.String() + "?x=1", nil, 400, "x"},
		{events + "?afterr=1.1", nil, 400, "afterr"},
		{events + "?after=5.1", nil, 400, "after"},
		{events, map[string]string{"Last-Event-ID": "2.1"}, 400, "Last-Event-ID"},
		{events, map[string]string{"Last-Event-ID": "one"}, 400, "Last-Event-ID"},
		{"/v1/runs?page_size=1&page_size=2", nil, 400, "page_size"},
		{"/v1/runs?state=completed&agent=probe&state=failed", nil, 400, "state"},
		{"/v1/runs/" + run.ID.String() + "?wait_ms=1&wait_ms=", nil, 400, "wait_ms"},
		{events + "?limit=1&after=1.1&limit=2", nil, 400, "limit"},
		{"/v1/runs/" + strings.ToLower(run.ID.String()), nil, 200, ""},
	} {
		status, eb := get(tc.path, tc.hdr)
		if status != tc.status || eb.Error.Field != tc.field {
			t.Errorf("GET %s %v = %d %+v, want %d naming %q", tc.path, tc.hdr, status, eb, tc.status, tc.field)
		}
	}
	missing := sortie.NewRunID(time.Now())
	if status, eb := get("/v1/runs/"+missing.String(), nil); status != 404 || !strings.Contains(eb.Error.Message, missing.String()) {
		t.Errorf("GET unknown run = %d %+v, want 404 naming the run", status, eb)
	}
}

// A host without API tokens serves loopback clients only: a web page's
// cross-site request or a rebound DNS name is refused and stores nothing.
func TestTokenlessHostRefusesBrowsers(t *testing.T) {
	r := newRig(t, nil)
	for _, hdr := range []map[string]string{{"Origin": "http://evil.example"}, {"Host": "evil.example:80"}} {
		req, _ := http.NewRequest(http.MethodPost, r.http.URL+"/v1/runs", strings.NewReader(`{"agent": "probe"}`))
		req.Header.Set("Content-Type", "text/plain")
		for k, v := range hdr {
			req.Header.Set(k, v)
			if k == "Host" {
				req.Host = v
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("submit with %v = %d, want 403", hdr, resp.StatusCode)
		}
	}
	if n := r.countRuns(t); n != 0 {
		t.Fatalf("%d runs stored by refused requests, want 0", n)
	}
	if got := post(t, r, "/v1/runs", `{"agent": "probe", "variables": {"events": 0}}`, map[string]string{"Origin": "http://127.0.0.1:3000"}, nil); got != http.StatusCreated {
		t.Fatalf("submit from a loopback origin = %d, want 201", got)
	}
}
