package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/sign"
)

// startServe runs `sortie serve` on a free loopback port and returns its
// URL; the process is stopped with SIGTERM at cleanup, and must exit 0.
func startServe(t *testing.T, c *cli, env []string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	return startServeCmd(t, c, env, append([]string{"--in-process"}, args...)...), nil
}

// startServeCmd runs `sortie serve` with args (workers are subprocesses
// unless args has --in-process).
func startServeCmd(t *testing.T, c *cli, env []string, args ...string) string {
	t.Helper()
	url, cmd := launchServe(t, c, env, args...)
	t.Cleanup(func() {
		if err := stopServe(cmd); err != nil {
			t.Error(err)
		}
	})
	return url
}

// launchServe starts `sortie serve` and waits for its address.
func launchServe(t testing.TB, c *cli, env []string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := c.cmd(append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sortie serve: %v", err)
	}
	sc := bufio.NewScanner(stderr)
	url := ""
	for url == "" && sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "listening on "); ok {
			url = strings.Fields(rest)[0]
		}
	}
	if url == "" {
		cmd.Process.Kill()
		t.Fatalf("sortie serve printed no listening address: %v", sc.Err())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return url, cmd
}

// stopServe sends SIGTERM and waits: serve must exit 0 within 30 s.
func stopServe(cmd *exec.Cmd) error {
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("sortie serve after SIGTERM: %v, want exit 0", err)
		}
		return nil
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return errors.New("sortie serve did not exit within 30 s of SIGTERM")
	}
}

// TestHostFlagRunsAgainstServe: the README's main job against `sortie
// serve` with --host, then get and list from other processes, all through
// the HTTP API, with API tokens.
func TestHostFlagRunsAgainstServe(t *testing.T) {
	c := newCLI(t)
	token := "test-token-0123456789"
	url, _ := startServe(t, c, []string{"SORTIE_API_TOKENS=" + token})
	remote := &cli{t: t, state: t.TempDir()} // no shared state: everything goes over HTTP
	withToken := func(args ...string) result {
		cmd := remote.cmd(append([]string{"--host", url}, args...)...)
		cmd.Env = append(cmd.Env, "SORTIE_TOKEN="+token)
		return runCmd(t, cmd)
	}
	r := withToken("run", "examples/textstats", "--json")
	if r.code != 0 {
		t.Fatalf("sortie --host run examples/textstats: exit %d\nstderr: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var last struct{ Run *sortie.Run }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Run == nil || last.Run.State != sortie.StateCompleted {
		t.Fatalf("last line %q: want the completed run (%v)", lines[len(lines)-1], err)
	}
	if len(lines) < 3 {
		t.Fatalf("run printed %d lines, want events then the run", len(lines))
	}
	g := withToken("get", string(last.Run.ID), "--json")
	var got sortie.Run
	if g.code != 0 || json.Unmarshal([]byte(g.stdout), &got) != nil || got.ID != last.Run.ID || string(got.Result) != string(last.Run.Result) {
		t.Fatalf("sortie --host get: exit %d, %q; want the run %s with its result", g.code, g.stdout, last.Run.ID)
	}
	// A client ignores the host settings in its environment.
	hostEnv := remote.cmd("--host", url, "get", string(last.Run.ID))
	hostEnv.Env = append(hostEnv.Env, "SORTIE_TOKEN="+token, "SORTIE_MAX_PAYLOAD_BYTES=-5", "SORTIE_PAYLOAD_BUCKET=ftp://x", "SORTIE_RETENTION=30d")
	if r := runCmd(t, hostEnv); r.code != 0 {
		t.Errorf("sortie --host get with bad host settings in the environment: exit %d, stderr %q; want them ignored", r.code, r.stderr)
	}
	// The same run is in serve's own state, read by the embedded engine.
	if local := c.get(last.Run.ID); local.State != sortie.StateCompleted {
		t.Fatalf("serve's state has the run in %s, want completed", local.State)
	}
	noToken := runCmd(t, remote.cmd("--host", url, "list"))
	if noToken.code != 2 || !strings.Contains(noToken.stderr, "401") || !strings.Contains(noToken.stderr, "SORTIE_TOKEN or --token-file") {
		t.Fatalf("list without a token: exit %d, stderr %q; want exit 2, a refusal naming 401 and how to give a token", noToken.code, noToken.stderr)
	}
	wrong := remote.cmd("--host", url, "list")
	wrong.Env = append(wrong.Env, "SORTIE_TOKEN=not-the-token-0123456789")
	if r := runCmd(t, wrong); r.code != 2 || !strings.Contains(r.stderr, "refused the API token given") {
		t.Fatalf("list with a wrong token: exit %d, stderr %q; want exit 2 saying the token given was refused", r.code, r.stderr)
	}
	resp, err := http.Get(url + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	card, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(card), `"scheme":"Bearer"`) {
		t.Fatalf("the agent card of a host with API tokens declares no bearer scheme: %s", card)
	}
	missing := withToken("get", string(sortie.NewRunID(time.Now())))
	if missing.code != 2 {
		t.Fatalf("get of an unknown run over --host: exit %d, want 2 as on the embedded engine", missing.code)
	}
}

func TestServeRefusesOpenNonLoopbackListen(t *testing.T) {
	c := newCLI(t)
	r := c.run("serve", "--listen", "0.0.0.0:0")
	if r.code != 2 || !strings.Contains(r.stderr, "SORTIE_API_TOKENS") {
		t.Fatalf("serve on 0.0.0.0 without tokens: exit %d, stderr %q; want 2 naming SORTIE_API_TOKENS", r.code, r.stderr)
	}
}

// A tokens file holds one token a line: a line with commas (as in
// SORTIE_API_TOKENS) is refused, not taken as one long token; so are short
// tokens and a file with none.
func TestServeRefusesBadTokensFiles(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct{ file, says string }{
		{"tok-aaaaaaaaaaaaaaaa,tok-bbbbbbbbbbbbbbbb\n", "API token 1 holds a comma"},
		{"tok-aaaaaaaaaaaaaaaa\nshort\n", "API token 2 is 5 bytes; at least 16"},
		{"# none yet\n\n", "holds no API token"},
	} {
		path := filepath.Join(t.TempDir(), "tokens")
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		r := c.run("serve", "--listen", "127.0.0.1:0", "--api-tokens-file", path)
		if r.code != 2 || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("serve with a tokens file %q: exit %d, stderr %q; want 2 saying %q", tc.file, r.code, r.stderr, tc.says)
		}
	}
}

func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return result{code, out.String(), errb.String()}
}

// TestServeDeliversSignedPushWebhooks: a push configuration set with the
// CLI over --host gets the run's final state, signed with the key in the
// served state directory; a webhook URL the destination policy refuses is
// refused when it is set.
func TestServeDeliversSignedPushWebhooks(t *testing.T) {
	c := newCLI(t)
	url, _ := startServe(t, c, nil, "--allow-destination", "127.0.0.1", "--allow-destination-addrs", "127.0.0.1/32", "--allow-http-destinations")
	var f struct { // host.WebhookKeysFile's format
		Primary string              `json:"primary"`
		Keys    map[string][]string `json:"keys"`
	}
	b, err := os.ReadFile(filepath.Join(c.state, "webhook-keys.json"))
	if err != nil || json.Unmarshal(b, &f) != nil {
		t.Fatalf("webhook-keys.json in the state dir: %v", err)
	}
	v, err := sign.NewVerifier(f.Keys[f.Primary], nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan sortie.Run, 16)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := v.VerifyRequest(r, 1<<20)
		if err != nil {
			t.Errorf("webhook signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var p struct{ Data struct{ Run sortie.Run } }
		json.Unmarshal(body, &p)
		got <- p.Data.Run
	}))
	defer recv.Close()
	remote := &cli{t: t, state: t.TempDir()}
	sub := runCmd(t, remote.cmd("--host", url, "submit", "probe", "--var", "sleep_ms=300", "--var", "events=0"))
	if sub.code != 0 {
		t.Fatalf("submit: exit %d: %s", sub.code, sub.stderr)
	}
	id := strings.TrimSpace(sub.stdout)
	if r := runCmd(t, remote.cmd("--host", url, "push", "set", id, "--url", recv.URL+"/hook")); r.code != 0 {
		t.Fatalf("push set: exit %d: %s", r.code, r.stderr)
	}
	refused := runCmd(t, remote.cmd("--host", url, "push", "set", id, "--id", "meta", "--url", "http://169.254.169.254/latest"))
	if refused.code != 2 || !strings.Contains(refused.stderr, "url") {
		t.Fatalf("push set to the metadata address: exit %d, %q; want 2 naming url", refused.code, refused.stderr)
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case run := <-got:
			if string(run.ID) != id {
				t.Fatalf("webhook for run %s, want %s", run.ID, id)
			}
			if run.State == sortie.StateCompleted {
				if len(run.SealedConfig) != 0 || run.RequestHash != "" {
					t.Fatalf("webhook body carries sealed_config or request_hash: %+v", run)
				}
				for _, a := range run.Attempts {
					if a.Owner != "local" || a.Ref != nil && (a.Ref.ID != "" || len(a.Ref.Detail) > 0 || a.Ref.Resource != "") {
						t.Fatalf("webhook body carries the host's process details: %+v", a.Ref)
					}
				}
				return
			}
		case <-deadline:
			t.Fatal("no webhook with the completed run within 20 s")
		}
	}
}

// TestServeWorkerCallbacks: with --worker-callbacks the attempts report
// over signed HTTP callbacks to serve instead of writing its state; the
// run completes with its events, and no attempt log holds the key.
func TestServeWorkerCallbacks(t *testing.T) {
	c := newCLI(t)
	url := startServeCmd(t, c, nil, "--worker-callbacks")
	r := runCmd(t, (&cli{t: t, state: t.TempDir()}).cmd("--host", url, "run", "probe", "--var", "events=3", "--json"))
	if r.code != 0 {
		t.Fatalf("run over callbacks: exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var last struct{ Run *sortie.Run }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Run == nil || last.Run.State != sortie.StateCompleted || len(lines) != 4 {
		t.Fatalf("output %q: want 3 events and the completed run", r.stdout)
	}
	info, err := os.Stat(filepath.Join(c.state, "callback-keys"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("callback-keys in the state dir: %v, mode %v; want mode 0600", err, info)
	}
	log, err := os.ReadFile(filepath.Join(c.state, "logs", string(last.Run.ID)+"-1.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) { // a warm worker's attempt with nothing to log has none
		t.Fatalf("attempt log: %v", err)
	}
	key, _ := os.ReadFile(filepath.Join(c.state, "callback-keys"))
	if secret := strings.TrimSpace(string(key)); strings.Contains(string(log), secret[strings.LastIndex(secret, ":")+1:]) {
		t.Fatal("the attempt log holds the callback key's secret")
	}
}

func TestEmptyHostIsRefused(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--host", "", "list"}, "", "--host is empty"},
		{[]string{"list"}, "SORTIE_HOST=", "SORTIE_HOST is set but empty"},
	} {
		cmd := c.cmd(tc.args...)
		if tc.env != "" {
			cmd.Env = append(cmd.Env, tc.env)
		}
		r := runCmd(t, cmd)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("sortie %v (%s): exit %d, %q; want 2 and %q", tc.args, tc.env, r.code, r.stderr, tc.want)
		}
	}
}

// TestServeHostsAgentDirectories: serve --agent DIR --runtimes FILE hosts an
// exec agent (a Python worker) that clients run by name over --host.
func TestServeHostsAgentDirectories(t *testing.T) {
	c := newCLI(t)
	url := startServeCmd(t, c, nil, "--agent", "examples/wordfreq-py", "--runtimes", "examples/runtimes.json")
	r := runCmd(t, (&cli{t: t, state: t.TempDir()}).cmd("--host", url, "run", "wordfreq-py", "--var", "text=to be or not to be", "--json"))
	if r.code != 0 {
		t.Fatalf("run wordfreq-py over --host: exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var last struct{ Run *sortie.Run }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Run == nil || last.Run.State != sortie.StateCompleted || last.Run.Agent.Runtime != "exec:wordfreq-py" {
		t.Fatalf("last line %q: want the completed exec:wordfreq-py run", lines[len(lines)-1])
	}
}

// TestEnvironmentYieldsToFlags: an exported SORTIE_HOST does not stop
// serve, and exported host settings (SORTIE_DYNAMODB_TABLE) do not stop a
// --host client.
func TestEnvironmentYieldsToFlags(t *testing.T) {
	c := newCLI(t)
	url := startServeCmd(t, c, []string{"SORTIE_HOST=http://127.0.0.1:1"}, "--in-process")
	cmd := (&cli{t: t, state: t.TempDir()}).cmd("--host", url, "list")
	cmd.Env = append(cmd.Env, "SORTIE_DYNAMODB_TABLE=sortie-runs", "SORTIE_DYNAMODB_ENDPOINT=http://127.0.0.1:1")
	if r := runCmd(t, cmd); r.code != 0 {
		t.Fatalf("--host list with SORTIE_DYNAMODB_* exported: exit %d, %q; want 0", r.code, r.stderr)
	}
}

// TestReadsRefuseMissingState: get and list on a state directory that
// holds no state (a typo) are refused and create nothing.
func TestReadsRefuseMissingState(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "typo")
	c := &cli{t: t, state: dir}
	for _, args := range [][]string{{"list"}, {"get", string(sortie.NewRunID(time.Now()))}} {
		if r := c.run(args...); r.code != 2 || !strings.Contains(r.stderr, "no Sortie state in "+dir) {
			t.Errorf("sortie %v on a missing state dir: exit %d, %q; want 2 naming the directory", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the missing state dir was created (%v)", err)
	}
}
