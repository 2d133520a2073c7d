package main

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/s3test"
	"github.com/sortie-run/sortie/payload"
)

// payloadCanary is in every large variable of these tests; no file of the
// state directory may hold it in plaintext.
const payloadCanary = "canary-payload-b41f0e"

// bigOutputVars returns the variables of a probe run whose variables and
// result are both about n bytes: {"output": "CANARY ..."}.
func bigOutputVars(n int) (vars []byte, output string) {
	output = strings.Repeat(payloadCanary+" ", n/(len(payloadCanary)+1))
	vars, _ = json.Marshal(map[string]string{"output": output})
	return vars, output
}

// checkLargeRun fails unless run completed with the 5 MB variables and
// result read back as if inline, both kept by reference.
func checkLargeRun(t *testing.T, what string, run *sortie.Run, output string) {
	t.Helper()
	var vars struct{ Output string }
	var result string
	if run == nil || run.State != sortie.StateCompleted {
		t.Fatalf("%s: run %+v, want completed", what, run)
	}
	if err := json.Unmarshal(run.Variables, &vars); err != nil || vars.Output != output {
		t.Errorf("%s: variables of %d bytes (%v), want the %d-byte output variable back", what, len(run.Variables), err, len(output))
	}
	if err := json.Unmarshal(run.Result, &result); err != nil || result != output {
		t.Errorf("%s: result of %d bytes (%v), want the %d-byte output", what, len(run.Result), err, len(output))
	}
	if run.VariablesRef == nil || run.ResultRef == nil {
		t.Errorf("%s: variables_ref %+v, result_ref %+v; want both kept by reference", what, run.VariablesRef, run.ResultRef)
	}
}

// runLarge runs the probe with a 5 MB variable it returns as its 5 MB
// result through `sortie run --vars-file --json`, checks the run and
// returns it with the output.
func runLarge(t *testing.T, c *cli) (*sortie.Run, string) {
	t.Helper()
	vars, output := bigOutputVars(5 << 20)
	f := filepath.Join(t.TempDir(), "vars.json")
	if err := os.WriteFile(f, vars, 0o600); err != nil {
		t.Fatal(err)
	}
	r := c.run("run", "probe", "--vars-file", f, "--json")
	if r.code != 0 {
		t.Fatalf("sortie run probe --vars-file (5 MB): exit %d: %.2000s", r.code, r.stderr)
	}
	_, final := jsonLines(t, r.stdout)
	checkLargeRun(t, "sortie run --json", final, output)
	return final, output
}

// flipByte flips one byte in the middle of the object key of the state
// directory's payload store.
func flipByte(t *testing.T, state, key string) {
	t.Helper()
	obj := filepath.Join(state, "payloads", filepath.FromSlash(key))
	b, err := os.ReadFile(obj)
	if err != nil {
		t.Fatalf("object %s: %v", key, err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(obj, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// noPlaintext fails when a file under dir holds the canary.
func noPlaintext(t *testing.T, dir string) {
	t.Helper()
	noPlaintextOf(t, dir, payloadCanary)
}

// noPlaintextOf fails when a file under dir holds canary.
func noPlaintextOf(t *testing.T, dir, canary string) {
	t.Helper()
	files := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files++
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s holds the payload canary in plaintext", p)
		}
		return nil
	})
	if files == 0 {
		t.Fatalf("no files under %s", dir)
	}
}

// A 5 MB variable and a 5 MB result round-trip through `sortie run` and
// `sortie get` (warm workers, fileblob in the state directory), sealed;
// one flipped byte in the stored result is refused on read.
func TestLargePayloadsCLI(t *testing.T) {
	c := newCLI(t)
	final, output := runLarge(t, c)
	got := c.get(final.ID)
	checkLargeRun(t, "sortie get --json", got, output)
	noPlaintext(t, c.state)
	offloaded := got.VariablesRef.Size + got.ResultRef.Size
	if u := got.Current().Usage; u == nil || u.PayloadReads != 1 || u.PayloadWrites != 2 || u.PayloadStore != "file" || u.OffloadedBytes != offloaded {
		t.Errorf("attempt usage %+v, want the engine's write (variables), the warm worker's read (variables) and write (result), %d bytes offloaded, on the file store", u, offloaded)
	}

	flipByte(t, c.state, got.ResultRef.Key)
	g := c.run("get", string(final.ID), "--json")
	if g.code == 0 || !strings.Contains(g.stderr, "SHA-256") || !strings.Contains(g.stderr, got.ResultRef.Key) {
		t.Fatalf("sortie get after one flipped byte: exit %d, stderr %.500q; want a refusal naming the SHA-256 and the key", g.code, g.stderr)
	}
}

// Through the HTTP API of `sortie serve` on an S3-protocol bucket: a 5 MB
// variable and a 5 MB result round-trip (submit, then GET as if inline),
// the same submission again with its idempotency key returns the same
// run, and no object holds the canary.
func TestLargePayloadsHTTPOnS3(t *testing.T) {
	srv := s3test.Start(t, "payloads")
	c := newCLI(t)
	token := "test-token-0123456789"
	url := startServeCmd(t, c, []string{"SORTIE_API_TOKENS=" + token, "SORTIE_PAYLOAD_BUCKET=" + srv.BlobURL()})
	vars, output := bigOutputVars(5 << 20)
	body := []byte(`{"agent":"probe","idempotency_key":"big-1","variables":` + string(vars) + `}`)
	var run sortie.Run
	if code := apiCall(t, http.MethodPost, url+"/v1/runs", token, body, &run); code != http.StatusCreated {
		t.Fatalf("POST /v1/runs (5 MB variables) = %d, want 201", code)
	}
	testwaitRun(t, url, token, run.ID)
	var got sortie.Run
	if code := apiCall(t, http.MethodGet, url+"/v1/runs/"+string(run.ID), token, nil, &got); code != http.StatusOK {
		t.Fatalf("GET /v1/runs/%s = %d", run.ID, code)
	}
	checkLargeRun(t, "GET /v1/runs/ID", &got, output)
	var again sortie.Run
	if code := apiCall(t, http.MethodPost, url+"/v1/runs", token, body, &again); code != http.StatusOK || again.ID != run.ID {
		t.Fatalf("POST /v1/runs again with its key = %d, run %s; want 200 and run %s", code, again.ID, run.ID)
	}
	if entries, err := os.ReadDir(filepath.Join(c.state, "payloads")); err == nil && len(entries) > 0 {
		t.Errorf("the state directory holds payloads %v, want them all in the bucket", entries)
	}
	noPlaintext(t, c.state)
	checkBucket(t, srv, run.ID)
}

// checkBucket fails unless the bucket holds run's two objects and only
// them (the repeated submission left none), none with the canary.
func checkBucket(t *testing.T, srv *s3test.Server, id sortie.RunID) {
	t.Helper()
	objs := srv.Objects(t)
	want := []string{payload.Key(id, sortie.ResultPayloadName(1)), payload.Key(id, "variables")}
	if len(objs) != 2 || objs[want[0]] == nil || objs[want[1]] == nil {
		keys := make([]string, 0, len(objs))
		for k := range objs {
			keys = append(keys, k)
		}
		t.Fatalf("the bucket holds %q, want %q", keys, want)
	}
	for k, b := range objs {
		if bytes.Contains(b, []byte(payloadCanary)) {
			t.Errorf("object %s holds the canary in plaintext", k)
		}
	}
}

func apiCall(t *testing.T, method, url, token string, body []byte, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
	} else {
		t.Logf("%s %s = %d: %.500s", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// testwaitRun waits until the run is terminal, long-polling the API.
func testwaitRun(t *testing.T, url, token string, id sortie.RunID) {
	t.Helper()
	waitFor(t, "run "+string(id)+" terminal", 60e9, func() bool {
		var r sortie.Run
		return apiCall(t, http.MethodGet, url+"/v1/runs/"+string(id)+"?wait_ms=2000", token, nil, &r) == http.StatusOK && r.State.Terminal()
	})
}

// sortie serve launching on the Lambda worker function, with a payload
// bucket and the KMS keyring: a 5 MB variable and a 5 MB result
// round-trip through `sortie --host URL run` and the function under the
// emulator, which reads and writes them through the presigned URLs the
// host sealed into its invocation; the objects are sealed with the
// keyring and hold no canary.
func TestLargePayloadsOnLambda(t *testing.T) {
	r := startAWSRig(t)
	srv := s3test.Start(t, "payloads")
	c := newCLI(t)
	env := append(awsCredentials(), "SORTIE_PAYLOAD_BUCKET="+srv.SigningBlobURL())
	url := startServeCmd(t, c, env, append(r.tableFlags(), "--lambda-function", "function",
		"--lambda-endpoint", r.rie.Endpoint, "--kms-keys", r.keyring(), "--kms-endpoint", r.kms.Endpoint)...)
	vars, output := bigOutputVars(5 << 20)
	f := filepath.Join(t.TempDir(), "vars.json")
	if err := os.WriteFile(f, vars, 0o600); err != nil {
		t.Fatal(err)
	}
	remote := &cli{t: t, state: t.TempDir()}
	out := runCmd(t, remote.cmd("--host", url, "run", "probe", "--vars-file", f, "--json"))
	if out.code != 0 {
		t.Fatalf("sortie --host %s run probe --vars-file (5 MB): exit %d: %.2000s", url, out.code, out.stderr)
	}
	_, final := jsonLines(t, out.stdout)
	checkLargeRun(t, "sortie --host run --json", final, output)
	if a := final.Current(); !strings.HasPrefix(a.Owner, "lambda:function/") {
		t.Errorf("attempt 1 Owner = %q, want lambda:function/REQUEST_ID (run in the worker function)", a.Owner)
	}
	checkBucket(t, srv, final.ID)
	noPlaintext(t, c.state)
}

// The payload flags refuse what cannot work naming the flag (exit 2):
// a limit out of range, a per-run limit under the per-payload one, a
// bucket URL of a scheme without a driver, a host setting given to a
// client of --host; a submission over the per-payload limit names the
// flag that sets it.
func TestPayloadFlagsUsage(t *testing.T) {
	c := newCLI(t)
	vars := filepath.Join(t.TempDir(), "vars.json")
	if err := os.WriteFile(vars, []byte(`{"output":"`+strings.Repeat("x", 300_000)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, c, []usageCase{
		{[]string{"--max-payload-bytes", "-5", "run", "probe"}, []string{"--max-payload-bytes: -5 outside"}},
		{[]string{"--max-run-payload-bytes", "10", "--max-payload-bytes", "100", "run", "probe"}, []string{"--max-run-payload-bytes: 10", "--max-payload-bytes 100"}},
		{[]string{"--payload-bucket", "ftp://x", "run", "probe"}, []string{"--payload-bucket", "ftp://", "gs://, s3://"}},
		{[]string{"--host", "http://127.0.0.1:9", "--max-payload-bytes", "100", "list"}, []string{"--max-payload-bytes", "--host"}},
		{[]string{"--host", "http://127.0.0.1:9", "--payload-bucket", "s3://b", "list"}, []string{"--payload-bucket", "--host"}},
		{[]string{"--max-payload-bytes", "100000", "run", "probe", "--vars-file", vars}, []string{"over the limit of 100000 bytes", "--max-payload-bytes, env SORTIE_MAX_PAYLOAD_BYTES"}},
	})
}
