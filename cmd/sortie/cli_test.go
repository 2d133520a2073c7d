package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
)

var submittedRE = regexp.MustCompile(`run ([0-9A-Z]{26}) submitted`)

// The README's main job: run the example, see events and the result, then
// read the run from another process.
func TestRunTextstats(t *testing.T) {
	c := newCLI(t)
	r := c.run("run", "examples/textstats")
	if r.code != 0 {
		t.Fatalf("sortie run examples/textstats: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"1.1    start", "progress", "completed after 1 attempt", `"top_terms"`, `"word": "light"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("sortie run output lacks %q:\n%s", want, r.stdout)
		}
	}
	m := submittedRE.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("sortie run stderr %q names no run ID", r.stderr)
	}
	run := c.get(sortie.RunID(m[1]))
	if run.State != sortie.StateCompleted || run.Attempt != 1 || !strings.Contains(string(run.Result), `"document":"opticks"`) {
		t.Errorf("sortie get %s = state %s attempt %d result %.80s; want completed on attempt 1 with the opticks stats",
			run.ID, run.State, run.Attempt, run.Result)
	}
}

func TestRunJSON(t *testing.T) {
	c := newCLI(t)
	r := c.run("run", "examples/textstats", "--json", "--var", "top=3")
	if r.code != 0 {
		t.Fatalf("sortie run --json: exit %d: %s", r.code, r.stderr)
	}
	events, final := jsonLines(t, r.stdout)
	checkContiguous(t, events)
	if len(events) < 5 || events[0].Kind != "start" || final == nil || final.State != sortie.StateCompleted {
		t.Fatalf("sortie run --json = %d events (first %+v), final %+v; want start, progress events, then the completed run", len(events), events[0], final)
	}
	var stats struct {
		TopTerms []json.RawMessage `json:"top_terms"`
	}
	if err := json.Unmarshal(final.Result, &stats); err != nil || len(stats.TopTerms) != 3 {
		t.Errorf("result top_terms = %d entries (%v), want 3 (--var top=3)", len(stats.TopTerms), err)
	}
}

func TestExitCodes(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		state sortie.State
	}{
		{"completed", []string{"--var", "events=2"}, 0, sortie.StateCompleted},
		{"failed", []string{"--var", `fail="bad input"`}, 1, sortie.StateFailed},
		{"interrupted", []string{"--var", `interrupt="input-required"`}, 4, sortie.StateInputRequired},
	} {
		r := c.run(append([]string{"run", "probe", "--json"}, tc.args...)...)
		_, final := jsonLines(t, r.stdout)
		if r.code != tc.code || final == nil || final.State != tc.state {
			t.Errorf("sortie run probe (%s): exit %d, final %v; want exit %d and state %s\n%s", tc.name, r.code, final, tc.code, tc.state, r.stderr)
		}
	}
}

func TestResumeInterruptedRun(t *testing.T) {
	c := newCLI(t)
	id := c.submit("probe", "--var", `interrupt="input-required"`)
	waitFor(t, "input-required", waitLong, func() bool { return c.get(id).State == sortie.StateInputRequired })
	r := c.run("resume", string(id), "--input", `{"name":"Newton"}`, "--json")
	_, final := jsonLines(t, r.stdout)
	if r.code != 0 || final == nil || final.Attempt != 2 || !strings.Contains(string(final.Result), "Newton") {
		t.Fatalf("sortie resume: exit %d final %+v; want completed on attempt 2 with the input\n%s", r.code, final, r.stderr)
	}
}

// resume --no-follow prints the run as get does, JSON only with --json,
// and its attempt outlives the command; the hint an interrupted run
// prints keeps the state directory.
func TestResumeNoFollowPrintsLikeGet(t *testing.T) {
	c := newCLI(t)
	id := c.submit("probe", "--var", `interrupt="input-required"`)
	waitFor(t, "input-required", waitLong, func() bool { return c.get(id).State == sortie.StateInputRequired })
	if r := c.run("get", string(id)); !strings.Contains(r.stdout, "resume with: sortie --state-dir "+c.state+" resume "+string(id)) {
		t.Errorf("sortie get of an input-required run: hint %q, want it naming --state-dir %s", r.stdout, c.state)
	}
	r := c.run("resume", string(id), "--no-follow")
	if first, _, _ := strings.Cut(r.stdout, "\n"); r.code != 0 || strings.Join(strings.Fields(first), " ") != "run "+string(id) {
		t.Errorf("sortie resume --no-follow: exit %d, stdout %q; want the run as text", r.code, r.stdout)
	}
	// The attempt it started goes on after resume returns, as a submit's does.
	waitFor(t, "the resumed run to end", waitLong, func() bool { return c.get(id).State.Terminal() })
	if run := c.get(id); run.State != sortie.StateCompleted || run.Attempt != 2 {
		t.Errorf("run resumed with --no-follow ended %s on attempt %d (%+v), want completed by attempt 2", run.State, run.Attempt, run.Error)
	}
	id2 := c.submit("probe", "--var", `interrupt="input-required"`)
	waitFor(t, "input-required", waitLong, func() bool { return c.get(id2).State == sortie.StateInputRequired })
	r = c.run("resume", string(id2), "--no-follow", "--json")
	var run sortie.Run
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &run) != nil || run.ID != id2 {
		t.Errorf("sortie resume --no-follow --json: exit %d, stdout %q; want the run as JSON", r.code, r.stdout)
	}
}

func TestIdempotencyKey(t *testing.T) {
	c := newCLI(t)
	a := c.submit("probe", "--idempotency-key", "order-42", "--var", "events=1")
	b := c.submit("probe", "--idempotency-key", "order-42", "--var", "events=1")
	if a != b {
		t.Fatalf("two submits with one idempotency key made runs %s and %s, want one", a, b)
	}
	r := c.run("submit", "probe", "--idempotency-key", "order-42", "--var", "events=2")
	if r.code != 2 || !strings.Contains(r.stderr, "idempotency key") {
		t.Errorf("submit with the key and other variables: exit %d, stderr %q; want exit 2 naming the idempotency key", r.code, r.stderr)
	}
}

func TestBadInput(t *testing.T) {
	c := newCLI(t)
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte(`{"text":"`+strings.Repeat("x", sortie.MaxVariablesBytes)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "probe", "--vars", "[1,2]"}, "--vars: must be a JSON object, got array"},
		{[]string{"run", "probe", "--vars", "{bad"}, "--vars: not a JSON object: invalid character"},
		// Over the payload store's per-payload limit (variables over
		// sortie.MaxVariablesBytes are kept by reference up to it).
		{[]string{"run", "probe", "--max-payload-bytes", "200000", "--vars-file", big}, "limit of 200000 bytes"},
		{[]string{"run", "probe", "--max-payload-bytes", "200000", "--var", "text=" + strings.Repeat("x", 100_000), "--var", "more=" + strings.Repeat("y", 100_000), "--var", "last=" + strings.Repeat("z", 100_000)}, "limit of 200000 bytes"},
		{[]string{"run", "probe", "--max-payload-bytes", "-1"}, "--max-payload-bytes: -1 outside"},
		{[]string{"run", "no-such-agent"}, "no agent named"},
		{[]string{"run", "examples/no-such-dir"}, "agent.json"},
		{[]string{"run", agentDir(t, `{"name":"probe","runtime":"go:probe"}}`)}, "agent.json: data after the JSON value at byte 37"},
		{[]string{"submit", "probe", "--policy", `{"max_attempts":1000}`}, "policy.max_attempts"},
		{[]string{"submit", "probe", "--policy", `{"max_attempts":1}}`}, "--policy: data after the JSON value at byte 18"},
		{[]string{"submit", "probe", "--policy", `{"max_attempt":1}`}, `--policy: json: unknown field "max_attempt"`},
		{[]string{"submit", "probe", "--idempotency-key", strings.Repeat("k", 300)}, "idempotency_key"},
		{[]string{"get", "../../etc/passwd"}, "run_id"},
		{[]string{"follow", "01JZZZZZZZZZZZZZZZZZZZZZZZ", "--after", "x"}, "--after"},
		{[]string{"list", "--state", "done"}, "state"},
		{[]string{"get"}, "accepts 1 arg"},
		{[]string{"submit", "probe", "--vars", "null", "--var", "a=1"}, "--vars"},
		{[]string{"submit", "probe", "--vars-file", "/dev/null"}, "--vars-file"},
		{[]string{"run", "probe", "--reconcile-interval", "0"}, "--reconcile-interval"},
		{[]string{"list", "--log-level", "bogus"}, "--log-level"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"run", "examples/wordfreq-py"}, "--runtimes"},
		{[]string{"run", "examples/wordfreq-py", "--runtimes", "examples/wordfreq-py/agent.json"}, "--runtimes"},
		{[]string{"run", "probe", "--state-dir", "/proc/no/such"}, "--state-dir"},
		{[]string{"submit", "probe", "--policy", `{"heartbeat_ms":1000,"lease_ms":2999}`}, "policy.heartbeat_ms"},
		{[]string{"submit", "probe", "--policy", `{"heartbeat_ms":"x"}`}, "--policy: heartbeat_ms: got string, want an integer"},
		{[]string{"submit", "probe", "--max-cost", "0.0000000001"}, "--max-cost: \"0.0000000001\" is not an amount of dollars with at most 9 decimals"},
		{[]string{"submit", "probe", "--max-cost", "0"}, "at least 0.000000001"},
		{[]string{"submit", "probe", "--var", "text=\xff\xfe"}, "not valid UTF-8"},
		{[]string{"submit", "probe", "--var", "t\xffext=1"}, "not valid UTF-8"},
		{[]string{"submit", "probe", "--policy", `{"heartbeat_ms":50,"lease_ms":3000}`}, "minimum of 100 ms"},
		{[]string{"submit", "probe", "--vars", `{"t":` + strings.Repeat("[", 256) + strings.Repeat("]", 256) + "}"}, "nested 257 levels deep"},
		{[]string{"submit", "probe", "--config-file", big}, "config"},
		{[]string{"submit", "probe", "--config-file", cfgFile(t, `{"API_TOKEN":"xxxxxxxx"}`)}, "--config-env"},
		{[]string{"submit", "probe", "--config-env", "API_TOKEN", "--config-file", cfgFile(t, `{"API_TOKEN":null}`)}, "JSON string"},
		{[]string{"submit", "probe", "--config-env", "API_TOKEN", "--config-file", cfgFile(t, `{"OTHER":"xxxxxxxx"}`)}, "not in --config-env"},
		{[]string{"submit", "probe", "--config-env", "API_TOKEN", "--config-file", cfgFile(t, `{"API_TOKEN":"short"}`)}, "too short to mask"},
		{[]string{"run", "probe", "--config-env", "API_TOKEN", "--config-file", cfgFile(t, `{"API_TOKEN":"longenoughsecretvalue","API_TOKEN":"x"}`)}, `--config-file: duplicate object key "API_TOKEN"`},
		{[]string{"--host", "http://127.0.0.1:1", "submit", "probe", "--config-file", cfgFile(t, `{"A_B":"12345678","A_B":"87654321"}`)}, `--config-file: duplicate object key "A_B"`},
		{[]string{"list", "--workers", "999999999"}, "--workers: 999999999 outside 0..1024 (0: the default, 16)"},
		{[]string{"list", "--workers", "-1"}, "--workers: -1 outside 0..1024"},
		{[]string{"list", "--workers", "16", "--worker-recycle", "-1"}, "sortie: --worker-recycle: -1 must not be negative"},
		{[]string{"list", "--state-dir", ""}, "--state-dir"},
		{[]string{"resume", "01JZZZZZZZZZZZZZZZZZZZZZZZ", "--input", "{}", "--input-file", "/dev/null"}, "[input input-file]"},
		{[]string{"submit", "probe", "--vars", `{"top":"many","top":5}`}, `--vars: duplicate object key "top"`},
		{[]string{"submit", "probe", "--vars-file", cfgFile(t, `{"a":{"b":1,"b":2}}`)}, `duplicate object key "b"`},
		{[]string{"submit", "probe", "--var", "top=1", "--var", "top=2"}, `variable "top" is given twice`},
		{[]string{"submit", "probe", "--label", "a=b", "--label", "a=c"}, `--label "a=c": label "a" is given twice`},
		{[]string{"submit", "probe", "--var", `o={"k":1,"k":2}`}, `--var o: duplicate object key "k"`},
		{[]string{"resume", "01JZZZZZZZZZZZZZZZZZZZZZZZ", "--input", `{"k":1,"k":2}`}, `--input: duplicate object key "k"`},
		{[]string{"resume", "01JZZZZZZZZZZZZZZZZZZZZZZZ", "--input-file", cfgFile(t, `[{"k":1,"\u006b":2}]`)}, `--input-file: duplicate object key "k"`},
		{[]string{"cost", "--top", "-1"}, "--top -1 outside 0..1000"},
		{[]string{"get", "01JZZZZZZZZZZZZZZZZZZZZZZZ", "--price", "bogus.key=1"}, `"bogus.key" is not a key of price table`},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--shutdown-grace", "-1s"}, "--shutdown-grace -1s: must not be negative"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--follow-poll", "-5s"}, "--follow-poll -5s: must not be negative"},
	} {
		r := c.run(tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("sortie %.80s: exit %d, stderr %.300q; want exit 2 naming %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}
	// A payload limit from the environment that is not a number is refused,
	// not read as 0 (the 100 MiB default).
	for _, env := range []string{"SORTIE_MAX_PAYLOAD_BYTES=abc", "SORTIE_MAX_RUN_PAYLOAD_BYTES=10MB"} {
		cmd := c.cmd("submit", "probe")
		cmd.Env = append(cmd.Env, env)
		if r := runCmd(t, cmd); r.code != 2 || !strings.Contains(r.stderr, "not an integer number of bytes") || !strings.Contains(r.stderr, strings.Split(env, "=")[0]) {
			t.Errorf("%s sortie submit probe: exit %d, stderr %.300q; want exit 2 naming the variable", env, r.code, r.stderr)
		}
	}
	if r := c.run("cost", "--top", "1001"); r.code != 2 || strings.Contains(r.stderr, "--since") {
		t.Errorf("sortie cost --top 1001: exit %d, stderr %q; want exit 2 naming only --top", r.code, r.stderr)
	}
	// Nothing above stored a run.
	r := c.run("list", "--json")
	var page sortie.RunPage
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Runs) != 0 {
		t.Errorf("sortie list after refused input = %q (%v), want no runs", r.stdout, err)
	}
}

func TestWorkerRefusesMalformedInvocation(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct{ stdin, want string }{
		{`{"version":"sortie.invocation/v9"}`, "invalid version"},
		{`not json`, "invalid invocation"},
		{`{"version":"sortie.invocation/v1","command":"/bin/sh"}`, "unknown field"},
	} {
		cmd := c.cmd("worker")
		cmd.Stdin = strings.NewReader(tc.stdin)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("sortie worker < %q: err %v, output %q; want a failure naming %q", tc.stdin, err, out, tc.want)
		}
	}
}

// A worker in another language runs through the exec runtime, picked from
// the host's allowlist by opaque ID.
func TestPythonExecWorker(t *testing.T) {
	c := newCLI(t)
	r := c.run("run", "examples/wordfreq-py", "--runtimes", "examples/runtimes.json", "--json",
		"--var", `text="the light, the light, the prism"`)
	events, final := jsonLines(t, r.stdout)
	checkContiguous(t, events)
	if r.code != 0 || final == nil || len(events) == 0 || !strings.Contains(string(final.Result), `["light",2]`) {
		t.Fatalf("sortie run examples/wordfreq-py: exit %d, %d events, final %+v\n%s", r.code, len(events), final, r.stderr)
	}
}

// An exec worker's stderr lands in the attempt's log file at the default
// log level, so a crash's traceback is there for the operator.
func TestExecWorkerStderrIsLogged(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	files := map[string]string{
		"crashy/agent.json": `{"name":"crashy","runtime":"exec:crashy"}`,
		"runtimes.json":     `{"version":"sortie.runtimes/v1","runtimes":{"crashy":{"command":["sh","-c","echo Traceback: boom-line-42 >&2; exit 3"]}}}`,
	}
	for name, body := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := c.run("run", filepath.Join(dir, "crashy"), "--runtimes", filepath.Join(dir, "runtimes.json"), "--max-attempts", "1", "--json")
	_, final := jsonLines(t, r.stdout)
	if r.code != 1 || final == nil || final.Error == nil || final.Error.Type != "exit" {
		t.Fatalf("run crashy: exit %d, final %+v; want exit 1, failed with error type exit\n%s", r.code, final, r.stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(c.state, "logs", string(final.ID)+"-1.log"))
	if len(logs) != 1 {
		t.Fatalf("no log file for %s-1 in %s/logs", final.ID, c.state)
	}
	b, _ := os.ReadFile(logs[0])
	if !strings.Contains(string(b), "boom-line-42") {
		t.Errorf("log %s lacks the worker's stderr line:\n%s", logs[0], b)
	}
}

// Inline configuration travels sealed: the secret reaches no stored byte,
// log line or output of a full run.
func TestInlineConfigNeverStoredInPlaintext(t *testing.T) {
	c := newCLI(t)
	const canary = "canary-7f3a9c2e-secret"
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"API_TOKEN":"`+canary+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := c.run("run", "probe", "--config-env", "API_TOKEN", "--config-file", cfg, "--json", "--var", "events=2")
	if r.code != 0 {
		t.Fatalf("run with --config-file: exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, canary) {
		t.Errorf("the canary appears in the CLI output")
	}
	filepath.WalkDir(c.state, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), canary) {
				t.Errorf("the canary appears in plaintext in %s", path)
			}
		}
		return nil
	})
	r = c.run("run", "probe", "--config-file", cfg)
	if r.code != 2 || !strings.Contains(r.stderr, "config") {
		t.Errorf("run with --config-file but inline configuration off: exit %d, %q; want exit 2 naming config", r.code, r.stderr)
	}
}

// agentDir writes an agent directory whose agent.json holds manifest.
func agentDir(t *testing.T, manifest string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agent.json"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cfgFile writes an inline configuration file for a test.
func cfgFile(t *testing.T, body string) string {
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Run IDs typed in lower case name the same run (a ULID's letters are
// case-insensitive), as the HTTP API has them.
func TestLowerCaseRunID(t *testing.T) {
	c := newCLI(t)
	id := c.submit("probe", "--var", "events=1")
	waitFor(t, "the run to end", waitLong, func() bool { return c.get(id).State.Terminal() })
	r := c.run("get", strings.ToLower(string(id)), "--json")
	var run sortie.Run
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &run) != nil || run.ID != id {
		t.Errorf("sortie get %s: exit %d, stdout %.200q, stderr %q; want run %s", strings.ToLower(string(id)), r.code, r.stdout, r.stderr, id)
	}
}

// A bare name that is no built-in agent names a directory here holding
// agent.json, as `sortie run echo` for ./echo; a built-in name wins.
func TestBareNameOfAnAgentDirectory(t *testing.T) {
	c := newCLI(t)
	dir := agentDir(t, `{"name":"bare","runtime":"go:probe"}`)
	cmd := c.cmd("run", filepath.Base(dir), "--var", "events=1", "--json")
	cmd.Dir = filepath.Dir(dir)
	r := runCmd(t, cmd)
	_, final := jsonLines(t, r.stdout)
	if r.code != 0 || final == nil || final.Agent.Name != "bare" {
		t.Errorf("sortie run %s (a directory in the working directory): exit %d, final %+v; want agent bare completed\n%s", filepath.Base(dir), r.code, final, r.stderr)
	}
}
