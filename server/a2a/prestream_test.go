package a2a_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/sortie-run/sortie"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

// Over the REST binding, subscribing to a finished or unknown task is an
// HTTP error response (400 / 404 with the google.rpc.Status body), as the
// binding answers unary calls, not a 200 event stream with the error in
// a data frame; a live task still streams.
func TestRESTSubscribeErrorsBeforeTheStream(t *testing.T) {
	r := newRig(t, nil, nil)
	done := send(t, r, msg(t, `{"events":0}`, "probe"), false)
	unknown := a2a.TaskID(sortie.NewRunID(time.Now()))
	for _, tc := range []struct {
		id     a2a.TaskID
		status int
		reason string
	}{
		{done.ID, http.StatusBadRequest, "UNSUPPORTED_OPERATION"},
		{unknown, http.StatusNotFound, "TASK_NOT_FOUND"},
	} {
		resp, err := http.Post(r.srv.URL+a2aserver.RESTPath+"/tasks/"+string(tc.id)+":subscribe", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct {
				Code    int `json:"code"`
				Details []struct {
					Reason string `json:"reason"`
				} `json:"details"`
			} `json:"error"`
		}
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" ||
			json.Unmarshal(body, &e) != nil || e.Error.Code != tc.status || len(e.Error.Details) == 0 || e.Error.Details[0].Reason != tc.reason {
			t.Errorf("POST tasks/%s:subscribe = %d %s %s; want %d application/json with reason %s",
				tc.id, resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status, tc.reason)
		}
	}
	c := newClient(t, r.srv.URL, a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{a2a.TransportProtocolHTTPJSON}}))
	if _, err := first(c.SubscribeToTask(testCtx(t), &a2a.SubscribeToTaskRequest{ID: done.ID})); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("SubscribeToTask(finished task) over REST = %v, want ErrUnsupportedOperation", err)
	}
	live := send(t, r, msg(t, `{"events":0,"until_cancelled":true}`, "probe"), true)
	ev, err := first(c.SubscribeToTask(testCtx(t), &a2a.SubscribeToTaskRequest{ID: live.ID}))
	if task, ok := ev.(*a2a.Task); err != nil || !ok || task.ID != live.ID {
		t.Errorf("SubscribeToTask(live task) over REST = %v, %v; want the task first", ev, err)
	}
	if _, err := r.client.CancelTask(testCtx(t), &a2a.CancelTaskRequest{ID: live.ID}); err != nil {
		t.Errorf("CancelTask = %v", err)
	}
}
