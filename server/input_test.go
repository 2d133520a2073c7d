package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// do sends method path with body (if not empty) and the headers, and
// returns the status, the headers and the error body of the answer.
func do(t *testing.T, r *rig, method, path, body string, hdr map[string]string) (int, http.Header, wire.ErrorBody) {
	t.Helper()
	return doAt(t, r.http.URL, method, path, body, hdr)
}

// doAt is do on the server at base.
func doAt(t *testing.T, base, method, path, body string, hdr map[string]string) (int, http.Header, wire.ErrorBody) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb wire.ErrorBody
	if len(b) > 0 && json.Unmarshal(b, &eb) != nil {
		t.Fatalf("%s %s = %d %q, not the API's error shape", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header, eb
}

// The errors of bad input name the field and the limit, and never echo
// more than a clip of the input.
func TestBadInputMessages(t *testing.T) {
	r := newRig(t, nil)
	long := strings.Repeat("a", 5000)
	for _, c := range []struct {
		name, body, field string
		want              []string // in the message
	}{
		{"depth", strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000), "body", []string{"nested 100000 levels deep", "sortie.MaxJSONDepth (256)"}},
		{"duplicate", `{"agent": "probe", "variables": {"top": "many", "top": 5}}`, "variables", []string{`duplicate object key "top"`}},
		{"long agent", `{"agent": "` + long + `"}`, "agent", nil},
		{"deep variables", `{"agent": "probe", "variables": {"v": ` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}}`, "variables", []string{"nested 301 levels deep, limit 256 (sortie.MaxJSONDepth)"}},
		{"long duplicate", `{"agent": "probe", "variables": {"` + long + `": 1, "` + long + `": 2}}`, "variables", []string{`duplicate object key "` + long[:80] + `" at`}},
	} {
		var eb wire.ErrorBody
		got := post(t, r, "/v1/runs", c.body, nil, &eb)
		if got != 400 || eb.Error.Field != c.field || len(eb.Error.Message) > 300 {
			t.Errorf("%s: POST /v1/runs = %d %.400v, want 400 naming %q in at most 300 bytes", c.name, got, eb, c.field)
		}
		for _, w := range c.want {
			if !strings.Contains(eb.Error.Message, w) {
				t.Errorf("%s: message %.400q, want it to say %q", c.name, eb.Error.Message, w)
			}
		}
	}
	if status, _, eb := do(t, r, http.MethodGet, "/v1/agents/"+long, "", nil); status != 400 || len(eb.Error.Message) > 200 || !strings.Contains(eb.Error.Message, `"`+long[:80]+`" must be`) {
		t.Errorf("GET /v1/agents/(5000 bytes) = %d %.300v, want 400 quoting 80 bytes of the name", status, eb)
	}
	run := r.submit(t, `{"events": 0}`)
	status, _, eb := do(t, r, http.MethodGet, "/v1/runs/"+run.ID.String()+"?wait_ms=abc", "", nil)
	if status != 400 || eb.Error.Field != "wait_ms" || !strings.Contains(eb.Error.Message, "must be an integer number of milliseconds, 0..30000") {
		t.Errorf("GET ?wait_ms=abc = %d %+v, want 400 saying wait_ms is an integer of ms 0..30000", status, eb)
	}
	if n := r.countRuns(t); n != 1 {
		t.Fatalf("%d runs stored, want only the one accepted", n)
	}
}

// A body declared other than JSON is refused 415, storing nothing; JSON
// with parameters is fine, and so is a body without a Content-Type.
func TestSubmitContentType(t *testing.T) {
	r := newRig(t, nil)
	body := `{"agent": "probe", "variables": {"events": 0}}`
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/jsonx", "bad;;"} {
		status, _, eb := do(t, r, http.MethodPost, "/v1/runs", body, map[string]string{"Content-Type": ct})
		if status != http.StatusUnsupportedMediaType || eb.Error.Code != wire.CodeUnsupportedMediaType || eb.Error.Field != "body" {
			t.Errorf("POST /v1/runs with Content-Type %q = %d %+v, want 415 unsupported_media_type", ct, status, eb)
		}
	}
	if n := r.countRuns(t); n != 0 {
		t.Fatalf("%d runs stored by refused requests, want 0", n)
	}
	for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON", ""} {
		hdr := map[string]string{"Content-Type": ct}
		if ct == "" {
			hdr = nil // http.NewRequest sets none
		}
		if status, _, eb := do(t, r, http.MethodPost, "/v1/runs", body, hdr); status != http.StatusCreated {
			t.Errorf("POST /v1/runs with Content-Type %q = %d %+v, want 201", ct, status, eb)
		}
	}
	run := r.submit(t, `{"events": 0}`)
	r.final(t, run.ID)
	if status, _, eb := do(t, r, http.MethodPost, "/v1/runs/"+run.ID.String()+"/cancel", "", nil); status == http.StatusUnsupportedMediaType {
		t.Errorf("POST cancel without a body = %d %+v, want no 415", status, eb)
	}
}

// A route's path with another method is answered 405 with Allow, in the
// API's error shape; a path with ".." segments 400, not a redirect.
func TestMethodsAndPaths(t *testing.T) {
	r := newRig(t, nil)
	id := sortie.NewRunID(time.Now()).String()
	for _, c := range []struct {
		method, path, allow string
	}{
		{http.MethodPost, "/v1/runs/" + id + "/push-configs", "GET, HEAD"},
		{http.MethodPatch, "/v1/runs/" + id, "GET, HEAD, DELETE"},
		{http.MethodDelete, "/v1/runs", "GET, HEAD, POST"},
		{http.MethodGet, "/v1/runs/" + id + "/cancel", "POST"},
	} {
		status, hdr, eb := do(t, r, c.method, c.path, "", nil)
		if status != http.StatusMethodNotAllowed || hdr.Get("Allow") != c.allow || eb.Error.Code != wire.CodeMethodNotAllowed {
			t.Errorf("%s %s = %d Allow %q %+v, want 405 Allow %q", c.method, c.path, status, hdr.Get("Allow"), eb, c.allow)
		}
	}
	if status, _, eb := do(t, r, http.MethodGet, "/v1/nothing", "", nil); status != http.StatusNotFound || eb.Error.Code != wire.CodeNotFound {
		t.Errorf("GET /v1/nothing = %d %+v, want 404 not_found", status, eb)
	}
	for _, p := range []string{"/v1/runs/../../etc/passwd", "/v1/runs/./x", "/v1//runs", "/v1/runs/%2e%2e", "/v1/runs/%2E/events", "/v1/agents/%2e%2e%2fx"} {
		req, _ := http.NewRequest(http.MethodGet, r.http.URL, nil)
		req.URL.Path, req.URL.RawPath = p, ""
		req.URL.Opaque = "//" + req.URL.Host + p // send the path as is
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var eb wire.ErrorBody
		err = json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || err != nil || eb.Error.Field != "path" {
			t.Errorf("GET %s = %d %+v (%v), want 400 naming path in the error shape", p, resp.StatusCode, eb, err)
		}
	}
}

// A body sent with a Content-Encoding the server does not decode is
// refused 415 naming the header; one starting with a byte-order mark, or
// not JSON, is refused 400 saying why and where. Nothing is stored.
func TestBodyEncodingBOMAndSyntaxErrors(t *testing.T) {
	r := newRig(t, nil)
	body := `{"agent": "probe", "variables": {"events": 0}}`
	for _, enc := range []string{"gzip", "br", "identity, gzip"} {
		status, hdr, eb := do(t, r, http.MethodPost, "/v1/runs", body, map[string]string{"Content-Encoding": enc})
		if status != http.StatusUnsupportedMediaType || eb.Error.Code != wire.CodeUnsupportedMediaType ||
			eb.Error.Field != "Content-Encoding" || hdr.Get("Accept-Encoding") != "identity" {
			t.Errorf("POST /v1/runs with Content-Encoding %q = %d %+v (Accept-Encoding %q), want 415 naming Content-Encoding",
				enc, status, eb, hdr.Get("Accept-Encoding"))
		}
	}
	for _, c := range []struct{ name, body, want string }{
		{"BOM", "\xef\xbb\xbf" + body, "starts with a UTF-8 byte-order mark (EF BB BF); JSON text must not begin with one (RFC 8259 §8.1)"},
		{"bad character", `{"agent": probe}`, "not a single valid JSON value (error after 11 bytes: invalid character 'p' looking for beginning of value)"},
		{"truncated", `{"agent": "probe"`, "(error after 17 bytes: unexpected end of JSON input)"},
		{"trailing", `{"agent": "probe"} x`, "(error after 20 bytes: invalid character 'x' after top-level value)"},
	} {
		status, _, eb := do(t, r, http.MethodPost, "/v1/runs", c.body, nil)
		if status != http.StatusBadRequest || eb.Error.Field != "body" || !strings.Contains(eb.Error.Message, c.want) {
			t.Errorf("%s: POST /v1/runs = %d %+v, want 400 naming body saying %q", c.name, status, eb, c.want)
		}
	}
	if n := r.countRuns(t); n != 0 {
		t.Fatalf("%d runs stored by refused requests, want 0", n)
	}
	if status, _, eb := do(t, r, http.MethodPost, "/v1/runs", body, map[string]string{"Content-Encoding": "identity"}); status != http.StatusCreated {
		t.Errorf("POST /v1/runs with Content-Encoding identity = %d %+v, want 201", status, eb)
	}
}
