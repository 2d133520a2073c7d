package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sortie-run/sortie"
)

// A 1 MB interrupt checkpoint and a 1 MB resume input round-trip by
// reference through `sortie serve` (local workers, the state directory's
// payload store): `sortie --host URL run` pauses, `sortie --host URL
// resume --input-file` sends the input over the API, and the resumed
// handler sees both exactly; no file of the state directory holds the
// canary.
func TestLargeResumeThroughServe(t *testing.T) {
	c := newCLI(t)
	url := startServeCmd(t, c, nil)
	checkpoint, _ := bigOutputVars(1 << 20)
	var cp struct{ Output json.RawMessage }
	_ = json.Unmarshal(checkpoint, &cp)
	input, _ := bigOutputVars(1 << 20)
	dir := t.TempDir()
	vars := filepath.Join(dir, "vars.json")
	in := filepath.Join(dir, "input.json")
	if err := os.WriteFile(vars, []byte(`{"events":0,"interrupt":"input-required","output":`+string(cp.Output)+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, input, 0o600); err != nil {
		t.Fatal(err)
	}
	remote := &cli{t: t, state: t.TempDir()}
	out := runCmd(t, remote.cmd("--host", url, "run", "probe", "--vars-file", vars, "--json"))
	_, paused := jsonLines(t, out.stdout)
	if out.code != 4 || paused == nil || paused.State != sortie.StateInputRequired {
		t.Fatalf("sortie --host run (interrupting): exit %d, %+v; want exit 4, input-required: %.2000s", out.code, paused, out.stderr)
	}
	out = runCmd(t, remote.cmd("--host", url, "resume", string(paused.ID), "--input-file", in, "--json"))
	_, final := jsonLines(t, out.stdout)
	var got struct {
		ResumedWith json.RawMessage `json:"resumed_with"`
		Checkpoint  json.RawMessage `json:"checkpoint"`
	}
	if out.code != 0 || final == nil || json.Unmarshal(final.Result, &got) != nil {
		t.Fatalf("sortie --host resume --input-file (1 MB): exit %d, %+v: %.2000s", out.code, final, out.stderr)
	}
	if !bytes.Equal(got.ResumedWith, input) || !bytes.Equal(got.Checkpoint, cp.Output) {
		t.Errorf("the resumed handler saw %d bytes of input and %d of checkpoint; want exactly the %d and %d", len(got.ResumedWith), len(got.Checkpoint), len(input), len(cp.Output))
	}
	noPlaintext(t, c.state)
}
