package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/remote"
)

// workingRun waits for the host's one working run.
func workingRun(t *testing.T, e sortie.ExecutionEngine) *sortie.Run {
	t.Helper()
	var run *sortie.Run
	testwait.Until(t, "a working remote run", 10*time.Second, func() bool {
		page, err := e.List(context.Background(), sortie.ListQuery{State: sortie.StateWorking})
		if err != nil || len(page.Runs) == 0 {
			return false
		}
		run = page.Runs[0]
		return true
	})
	return run
}

func TestAKeyedCallRecordsItsTaskUntilTheTaskEnds(t *testing.T) {
	n, _, h := newNode(t, false)
	store := &remote.MemoryBindings{}
	n.Bindings = store
	errc := make(chan error, 1)
	go func() {
		_, err := n.Call(testCtx(t), remote.Message{Data: json.RawMessage(`{"events":0,"until_cancelled":true}`)},
			&remote.CallOptions{Key: "order-7"})
		errc <- err
	}()
	run := workingRun(t, h.Engine)
	testwait.Until(t, "the call's binding record", 10*time.Second, func() bool {
		rec, err := store.GetBinding(context.Background(), "probe-node", "order-7")
		return err == nil && rec.TaskID == run.ID.String() && rec.AgentURL == hostURL && rec.MessageID != ""
	})
	if _, err := h.Engine.Cancel(testCtx(t), run.ID, "stop"); err != nil {
		t.Fatalf("Cancel(%s) = %v", run.ID, err)
	}
	var te *remote.TaskError
	if err := <-errc; !errors.As(err, &te) {
		t.Fatalf("Call of a task cancelled on the host = %v, want *TaskError", err)
	}
	if _, err := store.GetBinding(testCtx(t), "probe-node", "order-7"); !errors.Is(err, remote.ErrBindingNotFound) {
		t.Errorf("GetBinding after the task ended = %v, want ErrBindingNotFound", err)
	}
}

// failingPuts is a binding store that cannot store anything.
type failingPuts struct{ remote.MemoryBindings }

var errDiskFull = errors.New("disk full")

func (*failingPuts) PutBinding(context.Context, *remote.BindingRecord) error { return errDiskFull }

func TestACallWhoseBindingCannotBeRecordedCancelsItsTask(t *testing.T) {
	n, rec, h := newNode(t, false)
	n.Bindings = &failingPuts{}
	_, err := n.Call(testCtx(t), remote.Message{Data: json.RawMessage(`{"events":0,"until_cancelled":true}`)},
		&remote.CallOptions{Key: "order-8"})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Call with a failing binding store = %v, want the store's error", err)
	}
	o := rec.last()
	if !o.CancelSent || o.CancelErr != nil || o.TaskID == "" {
		t.Fatalf("last observation %+v, want the task's cancel sent", o)
	}
	if run := h.Wait(t, sortie.RunID(o.TaskID)); run.State != sortie.StateCancelled {
		t.Errorf("remote run of an unrecorded call is %s, want cancelled", run.State)
	}
}

func TestResumeAndCancelBoundNeedARecord(t *testing.T) {
	n, _, _ := newNode(t, false)
	var ve *sortie.ValidationError
	if _, err := n.Resume(testCtx(t), "k"); !errors.As(err, &ve) || ve.Field != "bindings" {
		t.Errorf("Resume without a store = %v, want a ValidationError for bindings", err)
	}
	n.Bindings = &remote.MemoryBindings{}
	if _, err := n.Resume(testCtx(t), "k"); !errors.Is(err, remote.ErrBindingNotFound) {
		t.Errorf("Resume(unknown key) = %v, want ErrBindingNotFound", err)
	}
	if err := n.CancelBound(testCtx(t), "k"); !errors.Is(err, remote.ErrBindingNotFound) {
		t.Errorf("CancelBound(unknown key) = %v, want ErrBindingNotFound", err)
	}
}
