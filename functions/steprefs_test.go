package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/envelopetest"
	"github.com/sortie-run/sortie/payload"
)

// stepCanary is in every large step result of these tests; the secret
// one's canary must be in no object or stored step in the clear.
const (
	stepCanary   = "canary-step-5d0c1a "
	secretCanary = "canary-secret-step-93e7 "
)

// bigText is about n bytes of canary.
func bigText(canary string, n int) string { return strings.Repeat(canary, n/len(canary)) }

// withPayloads gives the rig's worker a payload store on fileblob in
// dir (limits opts) and a step sealer, both with one local key.
func (r *stepRig) withPayloads(dir string, opts *payload.Options) {
	kr := envelopetest.Config(r.t, "k1")
	s, b, err := payload.OpenFile(dir, kr, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { b.Close() })
	r.w.Payloads, r.w.StepSealer = s, kr
}

// bigStepsHandler runs step "big" (plain) and "secret-big" (secret), each
// about 500 KB, counting their runs, and fails attempt 1 after them; a
// later attempt returns "same" when both results are byte for byte what
// attempt 1's functions returned.
func bigStepsHandler(runs *atomic.Int32) Handler { return largeStepsHandler(runs, 500<<10, 500<<10) }

// largeStepsHandler is bigStepsHandler with a plain step of about
// plainN bytes and a secret one of about secretN.
func largeStepsHandler(runs *atomic.Int32, plainN, secretN int) Handler {
	plain, secret := bigText(stepCanary, plainN), bigText(secretCanary, secretN)
	return func(ctx context.Context, c *Call) (any, error) {
		a, err := Step(ctx, c, "big", func(context.Context) (string, error) { runs.Add(1); return plain, nil })
		if err != nil {
			return nil, err
		}
		b, err := Step(ctx, c, "secret-big", func(context.Context) (string, error) { runs.Add(1); return secret, nil },
			&StepOptions{Secret: true})
		if err != nil {
			return nil, err
		}
		if c.Attempt() == 1 {
			return nil, errors.New("flaky after the steps")
		}
		if a != plain || b != secret {
			return nil, Permanent(errors.New("a replayed step's result differs"))
		}
		return "same", nil
	}
}

// A 500 KB step result and a 500 KB secret one are kept by reference in
// the payload store: the recorded steps hold references (a few hundred
// bytes against sortie.MaxStepsBytes), the retry replays both without
// running them and gets the exact bytes, and neither the objects nor the
// stored steps nor the events hold the secret canary in the clear.
func TestLargeStepsByReference(t *testing.T) {
	var runs atomic.Int32
	r := newStepRig(t, bigStepsHandler(&runs))
	dir := t.TempDir()
	r.withPayloads(dir, nil)
	if o := r.attempt(false); o.Error == nil || !o.Error.Retryable {
		t.Fatalf("attempt 1 = %+v, want the retryable error after the steps", o.Error)
	}
	steps, err := r.cp.Steps(t.Context(), r.run.ID)
	if err != nil || len(steps) != 2 {
		t.Fatalf("Steps = %d steps, %v; want 2", len(steps), err)
	}
	for _, st := range steps {
		want := payload.Key(r.run.ID, sortie.StepPayloadName(st.Name, 1))
		if st.ResultRef == nil || st.ResultRef.Key != want || len(st.Result)+len(st.Sealed) != 0 || st.Size() > 512 {
			t.Errorf("step %q recorded as result %d bytes, sealed %d, ref %+v (size %d); want only a reference to %s",
				st.Name, len(st.Result), len(st.Sealed), st.ResultRef, st.Size(), want)
		}
	}
	if o := r.attempt(false); string(o.Result) != `"same"` {
		t.Fatalf("attempt 2 = %+v, want \"same\": both steps replayed byte for byte", o)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the steps' functions ran %d times in all, want 2 (once each)", n)
	}
	stored, _ := json.Marshal(steps)
	events, _ := json.Marshal(r.events())
	for what, b := range map[string][]byte{"the stored steps": stored, "the events": events} {
		if bytes.Contains(b, []byte(secretCanary)) || bytes.Contains(b, []byte(stepCanary)) {
			t.Errorf("%s hold a step's result", what)
		}
	}
	noCanary(t, dir, secretCanary)
}

// noCanary fails when a file under dir holds canary.
func noCanary(t *testing.T, dir, canary string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		if b, err := os.ReadFile(p); err != nil || bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s holds the canary in the clear (%v)", p, err)
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("walk %s: %d files, %v", dir, files, err)
	}
}

// One flipped byte in a step's object fails the replay at once, not
// retryable, naming the integrity check; the step does not run again.
func TestLargeStepChangedObject(t *testing.T) {
	var runs atomic.Int32
	r := newStepRig(t, bigStepsHandler(&runs))
	dir := t.TempDir()
	r.withPayloads(dir, nil)
	r.attempt(false)
	obj := filepath.Join(dir, filepath.FromSlash(payload.Key(r.run.ID, sortie.StepPayloadName("big", 1))))
	b, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(obj, b, 0o600); err != nil {
		t.Fatal(err)
	}
	o := r.attempt(false)
	if e := o.Error; e == nil || e.Type != errTypeSteps || e.Retryable || !strings.Contains(e.Message, sortie.ErrPayloadIntegrity.Error()) {
		t.Fatalf("attempt 2 after a flipped byte = %+v, want a permanent %q error naming %q", o, errTypeSteps, sortie.ErrPayloadIntegrity)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the steps' functions ran %d times, want 2 (attempt 1 only)", n)
	}
}

// A step result over the store's per-payload limit is refused, naming the
// limit, permanently, and nothing is recorded.
func TestLargeStepOverPayloadLimit(t *testing.T) {
	r := newStepRig(t, func(ctx context.Context, c *Call) (any, error) {
		return c.Step(ctx, "huge", func(context.Context) (any, error) { return bigText(stepCanary, 300<<10), nil })
	})
	r.withPayloads(t.TempDir(), &payload.Options{Limits: sortie.PayloadLimits{MaxPayloadBytes: 200 << 10}})
	o := r.attempt(false)
	if e := o.Error; e == nil || e.Retryable || !strings.Contains(e.Message, "per-payload limit of 204800 bytes") {
		t.Fatalf("a 300 KB step over a 200 KiB per-payload limit = %+v, want a permanent error naming the limit", o)
	}
	if steps, err := r.cp.Steps(t.Context(), r.run.ID); err != nil || len(steps) != 0 {
		t.Errorf("Steps = %+v, %v; want none recorded", steps, err)
	}
}

// A 60 KB secret result is under sortie.MaxStepResultBytes but over
// sortie.MaxSecretStepInlineBytes (its envelope would not fit): it is kept
// by reference, and a retry replays it.
func TestSecretStepSealedOverLimit(t *testing.T) {
	secret := bigText(secretCanary, 60<<10)
	var runs atomic.Int32
	r := newStepRig(t, func(ctx context.Context, c *Call) (any, error) {
		got, err := Step(ctx, c, "secret", func(context.Context) (string, error) { runs.Add(1); return secret, nil },
			&StepOptions{Secret: true})
		if err != nil || c.Attempt() == 1 {
			return nil, errors.Join(err, errors.New("flaky after the step"))
		}
		return got == secret, nil
	})
	r.withPayloads(t.TempDir(), nil)
	if o := r.attempt(false); o.Error == nil || !strings.Contains(o.Error.Message, "flaky") {
		t.Fatalf("attempt 1 = %+v, want the flaky error after the step", o.Error)
	}
	steps, err := r.cp.Steps(t.Context(), r.run.ID)
	if err != nil || len(steps) != 1 || steps[0].ResultRef == nil || len(steps[0].Sealed) != 0 {
		t.Fatalf("Steps = %+v, %v; want the secret step by reference", steps, err)
	}
	if o := r.attempt(false); string(o.Result) != "true" || runs.Load() != 1 {
		t.Fatalf("attempt 2 = %+v after %d runs, want true after one run", o, runs.Load())
	}
}

// Only a Go session worker, which keeps the object itself, reports a
// step by reference: an exec command's step message with result_ref is
// refused, naming the field.
func TestStepMessageByReferenceOnlyFromGoSessions(t *testing.T) {
	recorded := 0
	j := newJournal(nil, func(context.Context, sortie.Step) (json.RawMessage, error) { recorded++; return nil, nil })
	m := &sortie.StepMessage{Version: sortie.StepVersion, Name: "big", ResultRef: &sortie.PayloadRef{Store: "file",
		Key: "runs/01JD0000000000000000000000/" + sortie.StepPayloadName("big", 1), Size: 1, SHA256: strings.Repeat("a", 64)}}
	var ve *sortie.ValidationError
	if _, err := j.reported(t.Context(), m, 1, false); !errors.As(err, &ve) || ve.Field != "step.result_ref" || recorded != 0 {
		t.Errorf("reported(result_ref from an exec command) = %v (%d recorded), want a ValidationError on step.result_ref", err, recorded)
	}
	m.Name = "big-2"
	if _, err := j.reported(t.Context(), m, 1, true); err != nil || recorded != 1 {
		t.Errorf("reported(result_ref from a Go session worker) = %v (%d recorded), want it recorded", err, recorded)
	}
}

// Step objects count against the store's per-run limit: with 700 KiB per
// run, the second 500 KB step is refused naming that limit, and only the
// first is recorded.
func TestLargeStepsOverRunLimit(t *testing.T) {
	r := newStepRig(t, func(ctx context.Context, c *Call) (any, error) {
		for _, name := range []string{"first", "second"} {
			if _, err := c.Step(ctx, name, func(context.Context) (any, error) { return bigText(stepCanary, 500<<10), nil }); err != nil {
				return nil, err
			}
		}
		return "both", nil
	})
	r.withPayloads(t.TempDir(), &payload.Options{Limits: sortie.PayloadLimits{MaxRunBytes: 700 << 10}})
	o := r.attempt(false)
	if e := o.Error; e == nil || e.Retryable || !strings.Contains(e.Message, "per-run limit of 716800 bytes") {
		t.Fatalf("two 500 KB steps under a 700 KiB per-run limit = %+v, want a permanent error naming the limit", o)
	}
	if steps, err := r.cp.Steps(t.Context(), r.run.ID); err != nil || len(steps) != 1 || steps[0].Name != "first" {
		t.Errorf("Steps = %+v, %v; want only step \"first\"", steps, err)
	}
}

// Steps kept by reference may run at once: four 100 KB steps in four
// goroutines are each stored and recorded, and the attempt's usage counts
// their four writes and bytes (go test -race checks the store is shared
// safely).
func TestLargeStepsConcurrent(t *testing.T) {
	const n = 4
	r := newStepRig(t, func(ctx context.Context, c *Call) (any, error) {
		errs := make(chan error, n)
		for i := range n {
			go func() {
				_, err := c.Step(ctx, fmt.Sprintf("part-%d", i), func(context.Context) (any, error) { return bigText(stepCanary, 100<<10), nil })
				errs <- err
			}()
		}
		var all error
		for range n {
			all = errors.Join(all, <-errs)
		}
		return "done", all
	})
	r.withPayloads(t.TempDir(), nil)
	o := r.attempt(false)
	if string(o.Result) != `"done"` {
		t.Fatalf("attempt = %+v, want done", o)
	}
	if u := o.Usage; u == nil || u.PayloadWrites != n || u.OffloadedBytes < n*100_000 {
		t.Errorf("usage %+v, want %d payload writes and at least %d bytes offloaded", u, n, n*100_000)
	}
	if steps, err := r.cp.Steps(t.Context(), r.run.ID); err != nil || len(steps) != n {
		t.Errorf("Steps = %d steps, %v; want %d", len(steps), err, n)
	}
}
