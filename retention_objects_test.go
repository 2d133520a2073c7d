package sortie_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/internal/logbuf"
)

// orderDeleter is an ObjectDeleter that records, for each run it is
// given, whether the control plane still held the run then, and fails
// when told to.
type orderDeleter struct {
	cp   sortie.ControlPlane
	held map[sortie.RunID]bool
	fail error
}

func (d *orderDeleter) DeleteRunObjects(ctx context.Context, run *sortie.Run, _ []sortie.Step) error {
	_, err := d.cp.Get(ctx, run.ID)
	d.held[run.ID] = err == nil
	return d.fail
}

// With an ObjectDeleter (an engine that holds no store: the Lambda
// reconciler), Expire and Delete delete a terminal run's objects while
// its record still names them, then the record; a failed object delete
// is logged and the run deleted all the same; a run that is not terminal
// keeps its objects and its record (ErrConflict).
func TestObjectDeleterGoesFirst(t *testing.T) {
	cp := memory.New()
	d := &orderDeleter{cp: cp, held: map[sortie.RunID]bool{}}
	var logs logbuf.Buffer
	e := sortie.NewEngine(cp, nil, probeAgent, &sortie.EngineOptions{ObjectDeleter: d, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(func() { e.Close(); cp.Close() })
	t0 := controlplanetest.T0
	old, recent := endedRun(t, cp, t0), endedRun(t, cp, t0+10_000)

	if n, err := e.Expire(t.Context(), time.UnixMilli(t0+5000), 10); err != nil || n != 1 {
		t.Fatalf("Expire = %d, %v; want 1 run expired", n, err)
	}
	if held, ok := d.held[old]; !ok || !held {
		t.Errorf("DeleteRunObjects(expired run) called %t, with its record held %t; want called before the record was deleted", ok, held)
	}
	if _, ok := d.held[recent]; ok {
		t.Errorf("DeleteRunObjects called for the run ended after the retention")
	}

	d.fail = errors.New("bucket unreachable")
	if err := e.Delete(t.Context(), recent); err != nil {
		t.Fatalf("Delete(objects failing) = %v, want nil: the run is deleted all the same", err)
	}
	if _, err := cp.Get(t.Context(), recent); !errors.Is(err, sortie.ErrNotFound) || !strings.Contains(logs.String(), "bucket unreachable") {
		t.Errorf("after Delete with failing objects: Get = %v, logs %q; want the run gone and the failure logged", err, logs.String())
	}

	live := controlplanetest.NewRun(t0)
	if _, _, err := cp.Reserve(t.Context(), &sortie.Reservation{Run: live, NowMs: t0}); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete(t.Context(), live.ID); !errors.Is(err, sortie.ErrConflict) {
		t.Errorf("Delete(a run not terminal) = %v, want ErrConflict", err)
	}
	if _, ok := d.held[live.ID]; ok {
		t.Errorf("DeleteRunObjects called for a run that is not terminal")
	}
}
