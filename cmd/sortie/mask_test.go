package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/testwait"
)

// echoAgent writes an exec agent that prints its configured API_TOKEN raw,
// base64- and hex-encoded in an event, and then in its result (or, with
// the variable fail, in its error), and the runtimes allowlist naming it.
func echoAgent(t *testing.T) (agent, runtimes string) {
	dir := t.TempDir()
	script := `read -r invocation
b64=$(printf %s "$API_TOKEN" | base64 -w0)
hx=$(printf %s "$API_TOKEN" | od -An -tx1 | tr -d ' \n')
printf '{"event":{"kind":"leak","text":"raw %s b64 %s hex %s"}}\n' "$API_TOKEN" "$b64" "$hx"
echo "stderr log $API_TOKEN $b64 $hx" >&2
case "$invocation" in
  *'"fail":true'*) printf '{"error":{"type":"auth","message":"401 for %s %s %s"}}\n' "$API_TOKEN" "$b64" "$hx" ;;
  *) printf '{"result":{"output":{"echo":"%s %s %s"}}}\n' "$API_TOKEN" "$b64" "$hx" ;;
esac
`
	files := map[string]string{
		"echo/agent.json": `{"name":"echo","runtime":"exec:echo","policy":{"max_attempts":1}}`,
		"echo.sh":         script,
		"runtimes.json":   `{"version":"sortie.runtimes/v1","runtimes":{"echo":{"command":["/bin/sh","` + filepath.Join(dir, "echo.sh") + `"],"env":{"PATH":"/usr/bin:/bin"}}}}`,
	}
	for name, body := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "echo"), filepath.Join(dir, "runtimes.json")
}

// An exec agent that prints its configured token raw, base64- and
// hex-encoded in an event, its log, its result and its error leaves no
// trace of it in the API's run, its SSE stream, the logs, or any file of
// the state directory (the database, its WAL, the attempt logs): each
// form is "[REDACTED:API_TOKEN]" before it leaves the worker.
func TestEchoedTokenLeavesNoTrace(t *testing.T) {
	const token = "tok-5c0ffee-a11ce-secret"
	forms := map[string]string{"raw": token, "base64": base64.StdEncoding.EncodeToString([]byte(token)), "hex": hex.EncodeToString([]byte(token))}
	agent, runtimes := echoAgent(t)
	c := newCLI(t)
	url := startServeCmd(t, c, nil, "--config-env", "API_TOKEN", "--runtimes", runtimes, "--agent", agent)
	var seen strings.Builder
	for vars, want := range map[string]sortie.State{`{}`: sortie.StateCompleted, `{"fail":true}`: sortie.StateFailed} {
		id := submitWithConfig(t, url, vars, token)
		body := waitRun(t, url, id)
		var run sortie.Run
		if err := json.Unmarshal([]byte(body), &run); err != nil || run.State != want {
			t.Fatalf("run with %s: %s, want %s", vars, body, want)
		}
		seen.WriteString(body)
		seen.WriteString(httpGet(t, url+"/v1/runs/"+string(id)+"/events", "text/event-stream"))
	}
	filepath.WalkDir(c.state, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			seen.WriteString(string(b))
		}
		return nil
	})
	all := seen.String()
	for name, form := range forms {
		if strings.Contains(all, form) {
			t.Errorf("the %s form of the token is in the API, SSE, logs or state files", name)
		}
	}
	if n := strings.Count(all, "[REDACTED:API_TOKEN]"); n < 6 {
		t.Errorf("%d markers in what was served and stored, want the token's forms in the events, result, error and log replaced", n)
	}
}

// submitWithConfig submits a run of the echo agent with API_TOKEN set.
func submitWithConfig(t *testing.T, url, vars, token string) sortie.RunID {
	t.Helper()
	body := `{"agent":"echo","variables":` + vars + `,"config":{"API_TOKEN":"` + token + `"}}`
	resp, err := http.Post(url+"/v1/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var run sortie.Run
	if err := json.NewDecoder(resp.Body).Decode(&run); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/runs: %d, %v", resp.StatusCode, err)
	}
	return run.ID
}

// waitRun waits for the run to end and returns its JSON as the API serves it.
func waitRun(t *testing.T, url string, id sortie.RunID) string {
	t.Helper()
	var body string
	testwait.Until(t, "run "+string(id)+" to end", time.Minute, func() bool {
		body = httpGet(t, url+"/v1/runs/"+string(id), "")
		var run sortie.Run
		return json.Unmarshal([]byte(body), &run) == nil && run.State.Terminal()
	})
	return body
}

func httpGet(t *testing.T, url, accept string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
