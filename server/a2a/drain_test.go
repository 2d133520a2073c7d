package a2a_test

import (
	"net/http"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote/remotetest"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

// statusRecorder wraps a response writer the way logging middleware does:
// it offers Unwrap but is no http.Flusher itself.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) { r.status = code; r.ResponseWriter.WriteHeader(code) }

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func TestStreamsWorkBehindMiddlewareWithoutFlusher(t *testing.T) {
	h := remotetest.New(t, nil)
	r := serveWrapped(t, h, h.Engine, nil, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			next.ServeHTTP(&statusRecorder{ResponseWriter: w}, req)
		})
	})
	n := 0
	for _, err := range r.client.SendStreamingMessage(testCtx(t), &a2a.SendMessageRequest{Message: msg(t, `{"events":2}`, "probe")}) {
		if err != nil {
			t.Fatalf("SendStreamingMessage behind middleware = %v", err)
		}
		n++
	}
	if n != 5 {
		t.Errorf("stream behind middleware gave %d events, want 5 (task, 2 events, artifact, status)", n)
	}
}

func TestDrainEndsLiveStreamsWithoutAFinalEvent(t *testing.T) {
	r := newRig(t, nil, nil)
	ctx := testCtx(t)
	task := send(t, r, msg(t, `{"events":0,"until_cancelled":true,"interval_ms":10}`, "probe"), true)
	var last a2a.Event
	n := 0
	for ev, err := range r.client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatalf("SubscribeToTask = %v, want the stream to end cleanly on drain", err)
		}
		n++
		last = ev
		if n == 3 {
			r.handler.Drain()
		}
	}
	if s, ok := last.(*a2a.TaskStatusUpdateEvent); !ok || s.Status.State != a2a.TaskStateWorking || s.Metadata[a2aserver.MetaCursor] == nil {
		t.Errorf("last event before the drain ended the stream: %+v, want a working event with its cursor", last)
	}
	blocked := send(t, r, msg(t, `{"events":0,"sleep_ms":60000}`, "probe"), false)
	if blocked.Status.State.Terminal() {
		t.Errorf("blocking SendMessage after Drain returned a %s task, want it at once, unfinished", blocked.Status.State)
	}
	for _, id := range []a2a.TaskID{task.ID, blocked.ID} {
		if _, err := r.host.Engine.Cancel(ctx, sortie.RunID(id), "test over"); err != nil {
			t.Errorf("Cancel(%s) = %v", id, err)
		}
	}
}
