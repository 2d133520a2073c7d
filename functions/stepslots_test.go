package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/s3test"
	"github.com/sortie-run/sortie/payload"
)

// withURLs makes the rig's worker one that reaches its payload store only
// through the URLs each attempt is granted (a Lambda or Cloud Run
// worker): the store is a gofakes3 bucket, returned with its server.
func (r *stepRig) withURLs() (*payload.Store, *s3test.Server) {
	kr := urlKeyring(r.t)
	store, srv := urlBucket(r.t, kr)
	r.w.PayloadURLs, r.w.StepSealer = kr, kr
	r.granter = payload.NewGranter(store, kr)
	return store, srv
}

// slotKey is the object key of step slot k of attempt.
func (r *stepRig) slotKey(attempt, k int) string {
	return payload.Key(r.run.ID, sortie.StepSlotPayloadName(attempt, k))
}

// A URL worker keeps a 200 KB step result and a 100 KB secret one by
// reference in its attempt's step slots: attempt 1 records both (slots 0
// and 1, two writes), fails retryably, and attempt 2 reads both back
// through its GET URLs (two reads) and gets them byte for byte without
// running them. The host's store reads the plain one back; no object,
// stored step or event holds either canary.
func TestLargeStepOnURLWorker(t *testing.T) {
	var runs atomic.Int32
	r := newStepRig(t, largeStepsHandler(&runs, 200<<10, 100<<10))
	store, srv := r.withURLs()
	o := r.attempt(false)
	if o.Error == nil || !o.Error.Retryable || !strings.Contains(o.Error.Message, "flaky") {
		t.Fatalf("attempt 1 = %+v, want the retryable error after the steps", o.Error)
	}
	if u := o.Usage; u == nil || u.PayloadWrites != 2 || u.PayloadStore != "s3" {
		t.Errorf("attempt 1's usage %+v, want the 2 step writes on s3", u)
	}
	steps, err := r.cp.Steps(t.Context(), r.run.ID)
	if err != nil || len(steps) != 2 {
		t.Fatalf("Steps = %d steps, %v; want 2", len(steps), err)
	}
	slots := map[string]bool{r.slotKey(1, 0): true, r.slotKey(1, 1): true}
	for _, st := range steps {
		if st.ResultRef == nil || !slots[st.ResultRef.Key] || len(st.Result)+len(st.Sealed) != 0 {
			t.Fatalf("step %q recorded as result %d bytes, sealed %d, ref %+v; want a reference to a slot of attempt 1", st.Name, len(st.Result), len(st.Sealed), st.ResultRef)
		}
		delete(slots, st.ResultRef.Key)
		if st.Name == "big" {
			got, err := store.Get(t.Context(), r.run.ID, "test", st.ResultRef)
			if want, _ := json.Marshal(bigText(stepCanary, 200<<10)); err != nil || !bytes.Equal(got, want) {
				t.Errorf("the host's store reads step \"big\" as %d bytes (%v), want the %d recorded", len(got), err, len(want))
			}
		}
	}
	o = r.attempt(false)
	if string(o.Result) != `"same"` || runs.Load() != 2 {
		t.Fatalf("attempt 2 = %+v after %d step runs, want \"same\" after 2: both replayed byte for byte", o, runs.Load())
	}
	if u := o.Usage; u == nil || u.PayloadReads != 2 || u.PayloadWrites != 0 {
		t.Errorf("attempt 2's usage %+v, want the 2 step reads and no write", u)
	}
	stored, _ := json.Marshal(steps)
	events, _ := json.Marshal(r.events())
	places := map[string][]byte{"the stored steps": stored, "the events": events}
	for k, v := range srv.Objects(t) {
		places["object "+k] = v
	}
	for what, b := range places {
		if bytes.Contains(b, []byte(secretCanary)) || bytes.Contains(b, []byte(stepCanary)) {
			t.Errorf("%s hold a step's result in the clear", what)
		}
	}
}

// concurrentStepsHandler runs n steps of about 70 KB each (over
// sortie.MaxStepResultBytes) at once, counting each one's runs.
func concurrentStepsHandler(n int, runs map[string]int, mu *sync.Mutex) Handler {
	return func(ctx context.Context, c *Call) (any, error) {
		errs := make(chan error, n)
		for i := range n {
			go func() {
				name := fmt.Sprintf("part-%d", i)
				_, err := c.Step(ctx, name, func(context.Context) (any, error) {
					mu.Lock()
					defer mu.Unlock()
					runs[name]++
					return bigText(stepCanary, 70<<10), nil
				})
				errs <- err
			}()
		}
		var all error
		for range n {
			all = errors.Join(all, <-errs)
		}
		return "done", all
	}
}

// Ten 70 KB steps at once on a URL worker: attempt 1 records exactly
// sortie.MaxStepSlots of them, each in its own slot, and fails retryably
// naming the limit; attempt 2 replays those without running them again,
// records the other two in its own fresh slots, and completes.
func TestStepSlotsUsedUp(t *testing.T) {
	const n = sortie.MaxStepSlots + 2
	runs, mu := map[string]int{}, &sync.Mutex{}
	r := newStepRig(t, concurrentStepsHandler(n, runs, mu))
	r.withURLs()
	o := r.attempt(false)
	if e := o.Error; e == nil || !e.Retryable || !strings.Contains(e.Message, "sortie.MaxStepSlots") {
		t.Fatalf("attempt 1 with %d large steps = %+v, want a retryable error naming sortie.MaxStepSlots", n, o)
	}
	first := r.slotsByAttempt(1, sortie.MaxStepSlots)
	if o = r.attempt(false); string(o.Result) != `"done"` {
		t.Fatalf("attempt 2 = %+v, want done", o)
	}
	second := r.slotsByAttempt(2, 2)
	for name, k := range runs {
		if want := 1 + btoi(second[name]); k != want {
			t.Errorf("step %s ran %d times, want %d (recorded by attempt %d)", name, k, want, 1+btoi(second[name]))
		}
	}
	if len(runs) != n || len(first)+len(second) != n {
		t.Errorf("%d steps ran, %d recorded by attempt 1 and %d by attempt 2; want all %d recorded once", len(runs), len(first), len(second), n)
	}
}

// slotsByAttempt returns the names of the steps attempt recorded, each
// by reference to a distinct slot of its own, failing unless there are
// want of them.
func (r *stepRig) slotsByAttempt(attempt, want int) map[string]bool {
	r.t.Helper()
	steps, err := r.cp.Steps(r.t.Context(), r.run.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	names, keys := map[string]bool{}, map[string]bool{}
	for _, st := range steps {
		if st.Attempt != attempt {
			continue
		}
		if st.ResultRef == nil || keys[st.ResultRef.Key] || !r.isSlot(attempt, st.ResultRef.Key) {
			r.t.Fatalf("step %q of attempt %d is kept as %+v; want its own slot of attempt %d", st.Name, attempt, st.ResultRef, attempt)
		}
		names[st.Name], keys[st.ResultRef.Key] = true, true
	}
	if len(names) != want {
		r.t.Fatalf("attempt %d recorded %d steps, want %d", attempt, len(names), want)
	}
	return names
}

// isSlot reports whether key is one of attempt's step slots.
func (r *stepRig) isSlot(attempt int, key string) bool {
	for k := range sortie.MaxStepSlots {
		if key == r.slotKey(attempt, k) {
			return true
		}
	}
	return false
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
