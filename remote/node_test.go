package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/remote"
	"github.com/sortie-run/sortie/remote/remotetest"
	"github.com/sortie-run/sortie/remote/runs"
)

const hostURL = "sortie://node-test"

// recorder keeps the observations of a node.
type recorder struct {
	mu  sync.Mutex
	obs []remote.Observation
}

func (r *recorder) Observe(_ context.Context, o remote.Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs = append(r.obs, o)
}

func (r *recorder) kinds() []remote.ObservationKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var k []remote.ObservationKind
	for _, o := range r.obs {
		k = append(k, o.Kind)
	}
	return k
}

func (r *recorder) all() []remote.Observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]remote.Observation(nil), r.obs...)
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (r *recorder) last() remote.Observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.obs[len(r.obs)-1]
}

func newNode(t *testing.T, streaming bool) (*remote.Node, *recorder, *remotetest.Host) {
	t.Helper()
	h := remotetest.New(t, nil)
	rec := &recorder{}
	tr := runs.New(runs.Single(hostURL, h.Engine), &runs.Options{PollInterval: 10 * time.Millisecond})
	return &remote.Node{Name: "probe-node", Transport: tr, Skill: "probe", AgentURL: hostURL,
		Streaming: streaming, Observer: rec}, rec, h
}

func TestNodeMirrorsTheCallersCancellationOntoTheRemoteTask(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		n, rec, h := newNode(t, streaming)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := n.Call(ctx, remote.Message{Data: json.RawMessage(`{"events":0,"until_cancelled":true}`)}, nil)
			errc <- err
		}()
		var id sortie.RunID
		testwait.Until(t, "the remote run to be working", 10*time.Second, func() bool {
			page, err := h.Engine.List(context.Background(), sortie.ListQuery{State: sortie.StateWorking})
			if err != nil || len(page.Runs) == 0 {
				return false
			}
			id = page.Runs[0].ID
			return true
		})
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("streaming=%v: Call after cancel = %v, want context.Canceled", streaming, err)
		}
		if run := h.Wait(t, id); run.State != sortie.StateCancelled {
			t.Errorf("streaming=%v: remote run after the caller cancelled is %s, want cancelled", streaming, run.State)
		}
		o := rec.last()
		if o.Kind != remote.RemoteCallError || !o.CancelSent || o.CancelErr != nil || o.TaskID != id.String() {
			t.Errorf("streaming=%v: last observation %+v, want remote_call_error with the cancel sent to task %s", streaming, o, id)
		}
	}
}

func TestNodeObservesAStreamingCall(t *testing.T) {
	n, rec, _ := newNode(t, true)
	var emitted []string
	n.Emit = func(_ context.Context, ev remote.StreamEvent) error {
		emitted = append(emitted, ev.Text)
		return nil
	}
	res, err := n.Call(context.Background(), remote.Message{Data: json.RawMessage(`{"events":2}`)}, &remote.CallOptions{ContextID: "c"})
	if err != nil {
		t.Fatalf("Call = %v", err)
	}
	want := []remote.ObservationKind{remote.RemoteCallStart, remote.RemoteStreamEvent, remote.RemoteStreamEvent,
		remote.RemoteStreamEvent, remote.RemoteCallSuccess}
	if d := cmp.Diff(want, rec.kinds()); d != "" {
		t.Errorf("observations (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"event 1 of 2", "event 2 of 2", ""}, emitted); d != "" {
		t.Errorf("emitted texts (-want +got):\n%s", d)
	}
	if o := rec.last(); o.TaskID != res.TaskID || o.ContextID != "c" || o.Node != "probe-node" || o.Skill != "probe" {
		t.Errorf("success observation %+v, want task %s in context c of node probe-node", o, res.TaskID)
	}
}

func TestNodeReportsAFailedCallWithoutCancelling(t *testing.T) {
	n, rec, _ := newNode(t, false)
	_, err := n.Call(context.Background(), remote.Message{Data: json.RawMessage(`{"events":0,"fail":"no"}`)}, nil)
	var te *remote.TaskError
	if !errors.As(err, &te) {
		t.Fatalf("Call(failing probe) = %v, want *TaskError", err)
	}
	o := rec.last()
	if o.Kind != remote.RemoteCallError || o.CancelSent || !errors.As(o.Err, &te) {
		t.Errorf("last observation %+v, want remote_call_error with the TaskError and no cancel", o)
	}
}

func TestNodeNeedsATransport(t *testing.T) {
	var n remote.Node
	_, err := n.Call(context.Background(), remote.Message{}, nil)
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "transport" {
		t.Errorf("Call on an empty Node = %v, want a ValidationError for transport", err)
	}
}
