package controlplanetest

import (
	"crypto/rand"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
)

// noise returns n printable ASCII bytes that do not compress and that
// JSON keeps as they are in a string (no '"', '\\', '<', '>' or '&').
func noise(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = ' ' + b[i]%93
		if strings.IndexByte(`"\\<>&`, b[i]) >= 0 {
			b[i] = '~'
		}
	}
	return string(b)
}

// wantTooLarge checks that Finish ended the attempt once with a permanent
// output_too_large error whose message holds each of names, kept the
// worker's usage and failed the run though attempts remain.
func wantTooLarge(t *testing.T, call string, got *sortie.Run, names ...string) {
	t.Helper()
	a := got.Current()
	if got.State != sortie.StateFailed || a == nil || a.Error == nil || a.Error.Type != sortie.ErrorTypeOutputTooLarge || a.Error.Retryable {
		t.Fatalf("%s: run %s, attempt %+v, want failed with a permanent %s error", call, stateOf(got), a, sortie.ErrorTypeOutputTooLarge)
	}
	for _, n := range names {
		if !strings.Contains(a.Error.Message, n) {
			t.Errorf("%s: error message %q, want it to name %q", call, a.Error.Message, n)
		}
	}
	if a.Usage == nil || a.Usage.DurationMs != 7 {
		t.Errorf("%s: attempt usage %+v, want the worker's (duration 7 ms) kept", call, a.Usage)
	}
	if got.Result != nil || got.Interrupt != nil || got.Attempt != 1 {
		t.Errorf("%s: result %d bytes, interrupt %v, attempt %d; want none stored and no retry", call, len(got.Result), got.Interrupt, got.Attempt)
	}
}

// testFinishOutputTooLarge: an outcome that cannot be stored ends the
// attempt once with a small permanent error naming the size and the
// limit, never a refusal the worker cannot answer: a result or a
// checkpoint over sortie.MaxResultBytes on every driver, and a run over
// the store's own limit where the harness says there is one.
func testFinishOutputTooLarge(t *testing.T, f *fixture) {
	usage := &sortie.Usage{DurationMs: 7}
	bigResult := json.RawMessage(`"` + strings.Repeat("a", sortie.MaxResultBytes) + `"`)
	run, lid := f.working(T0)
	got, err := f.cp.Finish(f.ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: T0 + 5,
		Outcome: sortie.Outcome{Result: bigResult, Usage: usage}})
	must(t, "Finish(result over MaxResultBytes)", err)
	wantTooLarge(t, "Finish(result over MaxResultBytes)", got, strconv.Itoa(len(bigResult)), strconv.Itoa(sortie.MaxResultBytes))
	f.unchanged("Finish(result over MaxResultBytes)", run.ID, got)

	run, lid = f.working(T0 + 10)
	in := &sortie.Interrupt{State: sortie.StateInputRequired, Checkpoint: bigResult}
	got, err = f.cp.Finish(f.ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: T0 + 15,
		Outcome: sortie.Outcome{Interrupt: in, Usage: usage}})
	must(t, "Finish(checkpoint over MaxResultBytes)", err)
	wantTooLarge(t, "Finish(checkpoint over MaxResultBytes)", got, "checkpoint", strconv.Itoa(len(bigResult)))

	big := NewRun(T0 + 20)
	big.Variables = json.RawMessage(`{"v":"` + noise(sortie.MaxVariablesBytes-20) + `"}`)
	f.reserve(big, T0+20)
	_, lid = f.launch(big.ID, 1, T0+21)
	f.claim(big.ID, 1, lid, T0+22)
	result := json.RawMessage(`"` + noise(sortie.MaxResultBytes-10) + `"`)
	got, err = f.cp.Finish(f.ctx, sortie.Finish{RunID: big.ID, Attempt: 1, LaunchID: lid, NowMs: T0 + 25,
		Outcome: sortie.Outcome{Result: result, Usage: usage}})
	must(t, "Finish(a full result on full variables)", err)
	if f.h.LimitsRunSize() {
		wantTooLarge(t, "Finish(a full result on full variables, over the store's limit)", got, "bytes", "limit")
	} else if got.State != sortie.StateCompleted || string(got.Result) != string(result) {
		t.Errorf("Finish(a full result on full variables) = %s with %d result bytes, want completed with all %d (the harness reports no run size limit)",
			stateOf(got), len(got.Result), len(result))
	}
	f.unchanged("Finish(a full result on full variables)", big.ID, got)
}
