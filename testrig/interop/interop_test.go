package interop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// token is the serve's API token; the scripts send it as a bearer token.
const token = "interop-token-0123456789abcdef"

// sortieBin is cmd/sortie, built once.
var sortieBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sortie-interop")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sortieBin = filepath.Join(dir, "sortie")
	if out, err := exec.Command("go", "build", "-o", sortieBin, "../../cmd/sortie").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/sortie: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireNode fails the test, saying what to install, unless node runs
// and testrig's packages are installed.
func requireNode(t *testing.T) {
	t.Helper()
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		t.Fatalf("the interop suite needs Node.js 20 or newer on PATH (node --version: %v); install it, then run `npm ci --prefix testrig`", err)
	}
	var major int
	if _, err := fmt.Sscanf(string(out), "v%d", &major); err != nil || major < 20 {
		t.Fatalf("the interop suite needs Node.js 20 or newer, found %s", bytes.TrimSpace(out))
	}
	for _, p := range []string{"@a2a-js/sdk", "eventsource", "standardwebhooks", "cloudevents"} {
		if _, err := os.Stat(filepath.Join("..", "node_modules", p, "package.json")); err != nil {
			t.Fatalf("%s is not installed in testrig/node_modules: run `npm ci --prefix testrig` in the repository root", p)
		}
	}
}

// host is a running `sortie serve`.
type host struct {
	url, state string
	cmd        *exec.Cmd
	stderr     *bytes.Buffer
}

// rules routes the CloudEvents of cloudevents.mjs to the probe agent.
const rules = `{"version": "sortie.triggers/v1", "rules": [{"name": "interop",
  "match": {"kind": "cloudevents", "type": "run.interop.requested", "source": "/interop/*"},
  "agent": "probe", "variables": {"events": 1, "output": {"n": "${data.n}"}}}]}`

// startHost runs `sortie serve` on a free loopback port with the API
// token, trigger rules and webhooks to loopback allowed; it is stopped
// with SIGTERM at cleanup and must exit 0.
func startHost(t *testing.T) *host {
	t.Helper()
	h := &host{state: t.TempDir(), stderr: &bytes.Buffer{}}
	rulesFile := filepath.Join(h.state, "rules.json")
	if err := os.WriteFile(rulesFile, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	h.cmd = exec.Command(sortieBin, "--state-dir", h.state, "serve", "--in-process", "--listen", "127.0.0.1:0",
		"--trigger-rules", rulesFile, "--allow-destination", "127.0.0.1", "--allow-destination-addrs", "127.0.0.1/32", "--allow-http-destinations")
	h.cmd.Env = append(os.Environ(), "SORTIE_API_TOKENS="+token, "SORTIE_STATE_DIR=")
	pipe, err := h.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("start sortie serve: %v", err)
	}
	sc := bufio.NewScanner(pipe)
	for h.url == "" && sc.Scan() {
		h.stderr.WriteString(sc.Text() + "\n")
		if _, rest, ok := strings.Cut(sc.Text(), "listening on "); ok {
			h.url = strings.Fields(rest)[0]
		}
	}
	if h.url == "" {
		h.cmd.Process.Kill()
		t.Fatalf("sortie serve printed no listening address:\n%s", h.stderr)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sc.Scan() {
		}
	}()
	t.Cleanup(func() {
		if err := h.stop(done); err != nil {
			t.Error(err)
		}
	})
	return h
}

// stop sends SIGTERM and waits up to 30 s for exit 0.
func (h *host) stop(drained <-chan struct{}) error {
	h.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { <-drained; exited <- h.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("sortie serve after SIGTERM: %v, want exit 0", err)
		}
		return nil
	case <-time.After(30 * time.Second):
		h.cmd.Process.Kill()
		return errors.New("sortie serve did not exit within 30 s of SIGTERM")
	}
}

// node runs script with the host's URL and token and env, and decodes its
// summary (the last line of its output) into v.
func (h *host) node(t *testing.T, script string, v any, env ...string) {
	t.Helper()
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), append([]string{"SORTIE_URL=" + h.url, "SORTIE_TOKEN=" + token}, env...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", script, err, &stdout, &stderr)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("node %s did not finish within 2 minutes\nstdout:\n%s\nstderr:\n%s", script, &stdout, &stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("node %s: summary %q: %v", script, lines[len(lines)-1], err)
	}
}

// get reads path of the host's API into v.
func (h *host) get(t *testing.T, path string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// post POSTs the JSON body to path of the host's API and returns the
// created resource's ID.
func (h *host) post(t *testing.T, path, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var out struct{ ID string }
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&out) != nil {
		t.Fatalf("POST %s = %d, want 201 with an id", path, resp.StatusCode)
	}
	return out.ID
}

// webhookSecret reads the host's primary webhook signing secret.
func (h *host) webhookSecret(t *testing.T) string {
	t.Helper()
	var f struct { // host.WebhookKeysFile's format
		Primary string              `json:"primary"`
		Keys    map[string][]string `json:"keys"`
	}
	b, err := os.ReadFile(filepath.Join(h.state, "webhook-keys.json"))
	if err != nil || json.Unmarshal(b, &f) != nil || len(f.Keys[f.Primary]) == 0 {
		t.Fatalf("webhook-keys.json in the state dir: %v", err)
	}
	return f.Keys[f.Primary][0]
}
