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
	checkResumeUsage(t, final, int64(len(cp.Output)), int64(len(input)))
	noPlaintext(t, c.state)
}

// checkResumeUsage fails unless run's attempts count the payload
// requests of an interrupted, then resumed, run on warm workers: attempt 1
// the engine's write of the variables, the worker's read of them and its
// write of the checkpoint; attempt 2 the engine's write of the resume
// input, the worker's reads of the variables, input and checkpoint, and
// its write of the result.
func checkResumeUsage(t *testing.T, run *sortie.Run, checkpoint, input int64) {
	t.Helper()
	if len(run.Attempts) != 2 || run.VariablesRef == nil || run.ResultRef == nil {
		t.Fatalf("run = %d attempts, variables ref %v, result ref %v; want 2 attempts, both by reference", len(run.Attempts), run.VariablesRef, run.ResultRef)
	}
	for i, want := range []sortie.Usage{
		{PayloadReads: 1, PayloadWrites: 2, OffloadedBytes: run.VariablesRef.Size + checkpoint},
		{PayloadReads: 3, PayloadWrites: 2, OffloadedBytes: input + run.ResultRef.Size},
	} {
		u := run.Attempts[i].Usage
		if u == nil || u.PayloadReads != want.PayloadReads || u.PayloadWrites != want.PayloadWrites || u.OffloadedBytes != want.OffloadedBytes || u.PayloadStore != "file" {
			t.Errorf("attempt %d usage = %+v; want %d reads, %d writes, %d bytes offloaded on the file store", i+1, u, want.PayloadReads, want.PayloadWrites, want.OffloadedBytes)
		}
	}
}
