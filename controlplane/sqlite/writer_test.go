package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
)

// TestBatchRollsBackOnlyTheFailedChange runs one group-commit batch by hand:
// a change that wrote a row and then failed must leave nothing, while the
// changes around it commit, and a change whose context ended never runs.
func TestBatchRollsBackOnlyTheFailedChange(t *testing.T) {
	c, err := Open(filepath.Join(t.TempDir(), "batch.db"), nil)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer c.Close()
	runs := make([]*sortie.Run, 4)
	for i := range runs {
		runs[i] = controlplanetest.NewRun(controlplanetest.T0)
		controlplane.NewRun(runs[i], &sortie.Reservation{Run: runs[i], NowMs: controlplanetest.T0})
	}
	boom := errors.New("failed after writing")
	insert := func(r *sortie.Run, fail error) func(context.Context, *stmtCache) error {
		return func(ctx context.Context, tx *stmtCache) error {
			if err := insertRun(ctx, tx, r); err != nil {
				return err
			}
			return fail
		}
	}
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	batch := []*writeReq{
		{ctx: t.Context(), fn: insert(runs[0], nil)},
		{ctx: t.Context(), fn: insert(runs[1], boom)},
		{ctx: ended, fn: insert(runs[2], nil)},
		{ctx: t.Context(), fn: insert(runs[3], nil)},
	}
	for _, r := range batch {
		r.done = make(chan error, 1)
	}
	c.runBatch(batch)
	wantErrs := []error{nil, boom, context.Canceled, nil}
	for i, r := range batch {
		if err := <-r.done; !errors.Is(err, wantErrs[i]) {
			t.Errorf("change %d of the batch = %v, want %v", i, err, wantErrs[i])
		}
	}
	for i, want := range []bool{true, false, false, true} {
		_, err := c.Get(t.Context(), runs[i].ID)
		if got := err == nil; got != want {
			t.Errorf("after the batch, Get(run %d) = %v, want stored %v", i, err, want)
		}
	}
}

// TestWriterSurvivesPanic: a change that panics fails alone and the writer
// goes on serving changes.
func TestWriterSurvivesPanic(t *testing.T) {
	c, err := Open(filepath.Join(t.TempDir(), "panic.db"), nil)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer c.Close()
	err = c.write(t.Context(), func(context.Context, *stmtCache) error { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "panicked: boom") {
		t.Errorf("write(a change that panics) = %v, want an error saying it panicked", err)
	}
	run := controlplanetest.NewRun(controlplanetest.T0)
	if _, _, err := c.Reserve(t.Context(), &sortie.Reservation{Run: run, NowMs: controlplanetest.T0}); err != nil {
		t.Errorf("Reserve after a panicking change = %v, want success", err)
	}
}
