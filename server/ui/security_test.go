package ui_test

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/ui"
	"github.com/sortie-run/sortie/wire"
)

const token = "a-long-api-token-0001"

// call sends method url with body (JSON) and headers, returning the
// status and the error code of a refusal.
func call(t *testing.T, c *http.Client, method, url, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "Host") {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb wire.ErrorBody
	_ = json.Unmarshal(b, &eb)
	return resp.StatusCode, eb.Error.Code
}

// login opens a session and returns its CSRF token.
func login(t *testing.T, r *rig, c *http.Client, tok string) string {
	t.Helper()
	resp, err := c.Post(r.ui+"session", "application/json", strings.NewReader(`{"token":"`+tok+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct {
		CSRF string `json:"csrf_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != http.StatusOK || s.CSRF == "" {
		t.Fatalf("POST session = %d, %v, csrf %q; want 200 with a CSRF token", resp.StatusCode, err, s.CSRF)
	}
	return s.CSRF
}

func TestSessionCookieIsHttpOnlyStrictAndScopedToTheUI(t *testing.T) {
	r := newRig(t)
	resp, err := http.Post(r.ui+"session", "application/json", strings.NewReader(`{"token":""}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	set := resp.Header.Get("Set-Cookie")
	for _, want := range []string{ui.CookieName + "=", "HttpOnly", "SameSite=Strict", "Max-Age="} {
		if !strings.Contains(set, want) {
			t.Errorf("Set-Cookie %q lacks %q", set, want)
		}
	}
	if strings.Contains(set, "Path=/;") || strings.HasSuffix(set, "Path=/") {
		t.Errorf("Set-Cookie %q is scoped to the whole origin; want the UI's path", set)
	}
}

// On a host with tokens only the CSRF checks stand between a cross-site
// page and the session (a host without tokens refuses other origins by
// the loopback rule first).
func TestStateChangesNeedTheCSRFToken(t *testing.T) {
	r := newRig(t, token)
	c := r.client(t)
	csrf := login(t, r, c, token)
	submit := `{"agent":"probe","variables":{"events":0}}`
	for _, tc := range []struct {
		name    string
		headers []string
	}{
		{"no token", nil},
		{"wrong token", []string{ui.CSRFHeader, "x" + csrf[1:]}},
		{"cross-site origin", []string{ui.CSRFHeader, csrf, "Origin", "http://evil.example"}},
		{"cross-site fetch", []string{ui.CSRFHeader, csrf, "Sec-Fetch-Site", "cross-site"}},
	} {
		if status, code := call(t, c, http.MethodPost, r.ui+"api/v1/runs", submit, tc.headers...); status != http.StatusForbidden || code != ui.CodeCSRF {
			t.Errorf("%s: POST api/v1/runs = %d %q, want 403 %q", tc.name, status, code, ui.CodeCSRF)
		}
	}
	page, err := r.engine.List(context.Background(), sortie.ListQuery{})
	if err != nil || len(page.Runs) != 0 {
		t.Fatalf("after refused submits List = %d runs, %v; want none stored", len(page.Runs), err)
	}
	if status, _ := call(t, c, http.MethodPost, r.ui+"api/v1/runs", submit, ui.CSRFHeader, csrf, "Origin", r.http.URL, "Sec-Fetch-Site", "same-origin"); status != http.StatusCreated {
		t.Fatalf("POST api/v1/runs with the CSRF token = %d, want 201", status)
	}
	if status, _ := call(t, c, http.MethodGet, r.ui+"api/v1/runs", ""); status != http.StatusOK {
		t.Errorf("GET api/v1/runs with the session = %d, want 200 (reads need no CSRF token)", status)
	}
}

// On a host with API tokens the page, its assets and the session state
// load without a token (they hold no data: the login form needs them),
// while every API call through the UI needs a session, which only a token
// the API accepts opens.
func TestAPICallsNeedASession(t *testing.T) {
	r := newRig(t, token)
	for _, path := range []string{"", "assets/app.css", "session"} {
		if status, _ := call(t, http.DefaultClient, http.MethodGet, r.ui+path, ""); status != http.StatusOK {
			t.Errorf("GET /ui/%s without a token = %d, want 200", path, status)
		}
	}
	for _, path := range []string{"api/v1/runs", "api/v1/runs/" + sortie.NewRunID(time.Now()).String()} {
		if status, code := call(t, http.DefaultClient, http.MethodGet, r.ui+path, ""); status != http.StatusUnauthorized || code != ui.CodeNoSession {
			t.Errorf("GET /ui/%s without a session = %d %q, want 401 %q", path, status, code, ui.CodeNoSession)
		}
	}
}

func TestLoginChecksTheTokenWithTheAPI(t *testing.T) {
	r := newRig(t, token)
	c := r.client(t)
	for _, tok := range []string{"", "a-wrong-token-of-enough-bytes"} {
		if status, _ := call(t, c, http.MethodPost, r.ui+"session", `{"token":"`+tok+`"}`); status != http.StatusUnauthorized {
			t.Errorf("login with %q = %d, want 401", tok, status)
		}
	}
	// A token twice: which one would the API have checked?
	if status, code := call(t, c, http.MethodPost, r.ui+"session", `{"token":"x","token":"`+token+`"}`); status != http.StatusBadRequest || code != "invalid_argument" {
		t.Errorf("login with the token key twice = %d %q, want 400 invalid_argument", status, code)
	}
	if status, _ := call(t, c, http.MethodGet, r.ui+"api/v1/runs", ""); status != http.StatusUnauthorized {
		t.Errorf("GET api/v1/runs after refused logins = %d, want 401", status)
	}
	login(t, r, c, token)
	if status, _ := call(t, c, http.MethodGet, r.ui+"api/v1/runs", ""); status != http.StatusOK {
		t.Errorf("GET api/v1/runs after login = %d, want 200", status)
	}
	if status, _ := call(t, http.DefaultClient, http.MethodGet, r.http.URL+"/v1/runs", ""); status != http.StatusUnauthorized {
		t.Errorf("GET /v1/runs without a bearer token = %d, want 401: the UI must not open the API", status)
	}
}

func TestLoginRefusesCrossSiteAndNonJSON(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		name, ctype string
		headers     []string
	}{
		{"form post", "text/plain", nil},
		{"cross-site", "application/json", []string{"Sec-Fetch-Site", "cross-site"}},
	} {
		req, _ := http.NewRequest(http.MethodPost, r.ui+"session", strings.NewReader(`{"token":""}`))
		req.Header.Set("Content-Type", tc.ctype)
		for i := 0; i < len(tc.headers); i += 2 {
			req.Header.Set(tc.headers[i], tc.headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("%s login = %d, cookie %q; want 403 and no cookie", tc.name, resp.StatusCode, resp.Header.Get("Set-Cookie"))
		}
	}
}

func TestLoopbackRuleOfAHostWithoutTokens(t *testing.T) {
	open := newRig(t)
	for _, h := range [][]string{{"Host", "evil.example"}, {"Origin", "https://evil.example"}} {
		for _, path := range []string{"", "session", "assets/js/app.js"} {
			if status, _ := call(t, http.DefaultClient, http.MethodGet, open.ui+path, "", h...); status != http.StatusForbidden {
				t.Errorf("GET /ui/%s with %s %s on a host without tokens = %d, want 403", path, h[0], h[1], status)
			}
		}
	}
	guarded := newRig(t, token)
	if status, _ := call(t, http.DefaultClient, http.MethodGet, guarded.ui, "", "Host", "sortie.example"); status != http.StatusOK {
		t.Errorf("GET /ui/ with Host sortie.example on a host with tokens = %d, want 200", status)
	}
}

func TestForwardsRunRoutesOnly(t *testing.T) {
	r := newRig(t)
	c := r.client(t)
	csrf := login(t, r, c, "")
	for _, path := range []string{"api/v1/worker/claim", "api/a2a", "api/v1/events", "api/healthz", "api/v1/runsx"} {
		if status, _ := call(t, c, http.MethodPost, r.ui+path, "{}", ui.CSRFHeader, csrf); status != http.StatusNotFound {
			t.Errorf("POST /ui/%s = %d, want 404", path, status)
		}
	}
}

func TestLogoutEndsTheSession(t *testing.T) {
	r := newRig(t)
	c := r.client(t)
	csrf := login(t, r, c, "")
	if status, _ := call(t, c, http.MethodDelete, r.ui+"session", ""); status != http.StatusForbidden {
		t.Errorf("DELETE session without the CSRF token = %d, want 403", status)
	}
	if status, _ := call(t, c, http.MethodDelete, r.ui+"session", "", ui.CSRFHeader, csrf); status != http.StatusNoContent {
		t.Errorf("DELETE session = %d, want 204", status)
	}
	if status, _ := call(t, c, http.MethodGet, r.ui+"api/v1/runs", ""); status != http.StatusUnauthorized {
		t.Errorf("GET api/v1/runs after logout = %d, want 401", status)
	}
}

func TestEveryAnswerHasTheStrictCSP(t *testing.T) {
	r := newRig(t)
	for _, path := range []string{"", "assets/js/app.js", "session", "nope"} {
		resp, err := http.Get(r.ui + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Content-Security-Policy"); got != ui.ContentSecurityPolicy {
			t.Errorf("GET /ui/%s: Content-Security-Policy %q, want %q", path, got, ui.ContentSecurityPolicy)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET /ui/%s: X-Content-Type-Options %q, want nosniff", path, got)
		}
	}
	for _, d := range []string{"script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(ui.ContentSecurityPolicy, d) || strings.Contains(ui.ContentSecurityPolicy, "unsafe") {
			t.Errorf("ContentSecurityPolicy %q: want %q and nothing unsafe", ui.ContentSecurityPolicy, d)
		}
	}
}

var (
	inlineCode     = regexp.MustCompile(`<script[^>]*>[^<]*</script>|\sstyle=|<style|\son[a-z]+=`)
	externalScript = regexp.MustCompile(`^<script [^>]*src="[^"]+"[^>]*></script>$`)
)

// The pages never turn data into HTML: no HTML sinks in the scripts, no
// inline script or style in the page.
func TestAssetsHaveNoHTMLSinksOrInlineCode(t *testing.T) {
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\(\s*'(style|on)`)
	err := fs.WalkDir(os.DirFS("assets"), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile("assets/" + path)
		if err != nil {
			return err
		}
		if m := sinks.Find(b); m != nil {
			t.Errorf("assets/%s uses %q", path, m)
		}
		if strings.HasSuffix(path, ".html") {
			for _, tag := range inlineCode.FindAll(b, -1) {
				if !externalScript.Match(tag) {
					t.Errorf("assets/%s has inline code: %q", path, tag)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Behind a proxy that ends TLS the cookie is Secure, and a page of the
// proxy's origin (another Host than the one the proxy forwards to) passes
// the origin check by its Fetch Metadata.
func TestBehindATLSProxy(t *testing.T) {
	r := newRig(t, token)
	req, _ := http.NewRequest(http.MethodPost, r.ui+"session", strings.NewReader(`{"token":"`+token+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("Origin", "https://sortie.example.com")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if set := resp.Header.Get("Set-Cookie"); resp.StatusCode != http.StatusOK || !strings.Contains(set, "Secure") {
		t.Errorf("login through a TLS proxy = %d, Set-Cookie %q; want 200 and a Secure cookie", resp.StatusCode, set)
	}
}
