package host_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/internal/testwait"
)

// resumeCanary is in every large checkpoint and resume input of these
// tests; no file of the state directory may hold it in plaintext.
const resumeCanary = "canary-resume-7d21c4"

// canaryJSON is a JSON string of about n bytes of the canary.
func canaryJSON(n int) []byte {
	b, _ := json.Marshal(strings.Repeat(resumeCanary+" ", n/(len(resumeCanary)+1)))
	return b
}

// interrupted submits a probe run that interrupts with checkpoint and
// waits until it is input-required, returning the run as stored.
func interrupted(t *testing.T, h *host.Host, checkpoint []byte) *sortie.Run {
	t.Helper()
	vars := `{"events":0,"interrupt":"input-required","output":` + string(checkpoint) + `}`
	run := probe(t, h.Client(), vars)
	return waitStored(t, h, run.ID, sortie.StateInputRequired)
}

// waitStored waits until run id is in state, reading it as stored.
func waitStored(t *testing.T, h *host.Host, id sortie.RunID, state sortie.State) *sortie.Run {
	t.Helper()
	var run *sortie.Run
	testwait.UntilReport(t, "run "+string(id)+" to be "+string(state), waitLong, func() (bool, string) {
		var err error
		if run, err = h.Engine().GetStored(t.Context(), id); err != nil {
			t.Fatalf("GetStored(%s) = %v", id, err)
		}
		return run.State == state, string(run.State)
	})
	return run
}

// A 1 MB interrupt checkpoint and a 1 MB resume input round-trip by
// reference through an interrupted, then resumed, run on the in-process
// worker (SQLite, fileblob): the stored run holds references only, the
// resumed handler sees the exact bytes, Get reads both back as if inline,
// and no file of the state directory holds the canary.
func TestResumeInputAndCheckpointByReference(t *testing.T) {
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true})
	checkpoint, input := canaryJSON(1<<20), []byte(`{"answer":`+string(canaryJSON(1<<20))+`}`)
	paused := interrupted(t, h, checkpoint)
	ref := paused.Interrupt.CheckpointRef
	if ref == nil || len(paused.Interrupt.Checkpoint) != 0 || ref.Key != "runs/"+string(paused.ID)+"/checkpoint-1" || ref.Size != int64(len(checkpoint)) {
		t.Fatalf("stored interrupt = %d bytes of checkpoint, ref %+v; want only a reference to checkpoint-1 of %d bytes", len(paused.Interrupt.Checkpoint), ref, len(checkpoint))
	}
	if got, err := h.Client().Get(t.Context(), paused.ID); err != nil || !bytes.Equal(got.Interrupt.Checkpoint, checkpoint) {
		t.Fatalf("Get(interrupted run) = %v; want the checkpoint read back as if inline", err)
	}

	resumed, err := h.Client().Resume(t.Context(), paused.ID, input)
	if err != nil {
		t.Fatalf("Resume(%d bytes) = %v", len(input), err)
	}
	if r := resumed.ResumeInputRef; r == nil || len(resumed.ResumeInput) != 0 || !strings.HasPrefix(r.Key, "runs/"+string(paused.ID)+"/resume-input-2-") {
		t.Fatalf("Resume = %d bytes of input inline, ref %+v; want a reference to resume-input-2-*", len(resumed.ResumeInput), r)
	}
	done := wait(t, h.Client(), paused.ID)
	var out struct {
		ResumedWith json.RawMessage `json:"resumed_with"`
		Checkpoint  json.RawMessage `json:"checkpoint"`
	}
	if done.State != sortie.StateCompleted || json.Unmarshal(done.Result, &out) != nil {
		t.Fatalf("resumed run = %s (%+v), want completed with the probe's result", done.State, done.Error)
	}
	if !bytes.Equal(out.ResumedWith, input) || !bytes.Equal(out.Checkpoint, checkpoint) {
		t.Errorf("the resumed handler saw %d bytes of input and %d of checkpoint, want exactly the %d and %d stored", len(out.ResumedWith), len(out.Checkpoint), len(input), len(checkpoint))
	}
	if got, err := h.Client().Get(t.Context(), paused.ID); err != nil || !bytes.Equal(got.ResumeInput, input) || got.ResumeInputRef == nil {
		t.Errorf("Get(resumed run) = %v; want the resume input read back as if inline, with its reference", err)
	}
	noCanary(t, h.StateDir())
}

// noCanary fails when a file under dir holds resumeCanary.
func noCanary(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(resumeCanary)) {
			t.Errorf("%s holds the canary in plaintext", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// One flipped byte in a stored checkpoint fails the resumed attempt at
// once (error type "payload", not retried, naming the key and
// sortie.ErrPayloadIntegrity), and reading the run is refused with
// sortie.ErrPayloadIntegrity.
func TestFlippedCheckpointFailsTheResumedAttempt(t *testing.T) {
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true})
	paused := interrupted(t, h, canaryJSON(300<<10))
	key := paused.Interrupt.CheckpointRef.Key
	obj := filepath.Join(h.StateDir(), host.PayloadDir, filepath.FromSlash(key))
	b, err := os.ReadFile(obj)
	if err != nil {
		t.Fatalf("the checkpoint's object: %v", err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(obj, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Client().Resume(t.Context(), paused.ID, json.RawMessage(`{"answer":"go on"}`)); err != nil {
		t.Fatalf("Resume = %v", err)
	}
	failed := waitStored(t, h, paused.ID, sortie.StateFailed)
	e := failed.Error
	if e == nil || e.Type != "payload" || e.Retryable || !strings.Contains(e.Message, key) || !strings.Contains(e.Message, sortie.ErrPayloadIntegrity.Error()) || len(failed.Attempts) != 2 {
		t.Fatalf("resumed run = %d attempts, error %+v; want attempt 2 failed with a permanent payload error naming %s and the integrity check", len(failed.Attempts), e, key)
	}
	if _, err := h.Client().Get(t.Context(), paused.ID); !errors.Is(err, sortie.ErrPayloadIntegrity) {
		t.Errorf("Get(run with a changed checkpoint) = %v, want ErrPayloadIntegrity", err)
	}
}

// A resume input over the payload store's per-payload maximum is refused
// at resume naming the field and the limit; nothing is stored and the run
// stays input-required.
func TestResumeInputOverStoreLimitRefused(t *testing.T) {
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true, PayloadLimits: sortie.PayloadLimits{MaxPayloadBytes: 512 << 10}})
	paused := interrupted(t, h, []byte(`{"step":1}`))
	input := []byte(`{"answer":` + string(canaryJSON(600<<10)) + `}`)
	_, err := h.Client().Resume(t.Context(), paused.ID, input)
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "input" || !strings.Contains(err.Error(), "524288") {
		t.Fatalf("Resume(%d bytes) = %v; want a ValidationError on input naming the 524288-byte limit", len(input), err)
	}
	if run := waitStored(t, h, paused.ID, sortie.StateInputRequired); run.ResumeInputRef != nil || len(run.ResumeInput) != 0 {
		t.Errorf("after the refusal the run holds resume input %d bytes, ref %+v; want none", len(run.ResumeInput), run.ResumeInputRef)
	}
	entries, _ := os.ReadDir(filepath.Join(h.StateDir(), host.PayloadDir, "runs", string(paused.ID)))
	for _, e := range entries {
		t.Errorf("object %s stored for a refused resume", e.Name())
	}
	noCanary(t, h.StateDir())
}

// A resume input counts toward the payload store's per-run total with the
// run's other objects (here its variables and checkpoint, 600 KB each):
// one that would take the run over it is refused naming the limit.
func TestResumeInputCountsTowardTheRunTotal(t *testing.T) {
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true, PayloadLimits: sortie.PayloadLimits{MaxRunBytes: 1_500_000}})
	paused := interrupted(t, h, canaryJSON(600<<10))
	if paused.VariablesRef == nil || paused.Interrupt.CheckpointRef == nil {
		t.Fatalf("variables ref %+v, checkpoint ref %+v; want both kept by reference", paused.VariablesRef, paused.Interrupt.CheckpointRef)
	}
	_, err := h.Client().Resume(t.Context(), paused.ID, []byte(`{"answer":`+string(canaryJSON(600<<10))+`}`))
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "input" || !strings.Contains(err.Error(), "per-run limit of 1500000") {
		t.Fatalf("Resume(600 KB) = %v; want a ValidationError on input naming the per-run limit of 1500000 bytes", err)
	}
	if run := waitStored(t, h, paused.ID, sortie.StateInputRequired); run.ResumeInputRef != nil {
		t.Errorf("after the refusal the run holds resume input ref %+v, want none", run.ResumeInputRef)
	}
}
