package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote"
	"github.com/sortie-run/sortie/remote/remotetest"
	"github.com/sortie-run/sortie/remote/runs"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/server/httpengine"
)

// TestOverTheHostsHTTPAPI runs the transport over server/httpengine
// against a host's HTTP API on loopback: the same transport as in
// process, through a remote host.
func TestOverTheHostsHTTPAPI(t *testing.T) {
	h := remotetest.New(t, nil)
	api, err := server.New(server.Options{Engine: h.Engine, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("server.New = %v", err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	tr := runs.New(func(_ context.Context, u string) (sortie.ExecutionEngine, error) {
		return httpengine.New(u, nil)
	}, &runs.Options{PollInterval: 10 * time.Millisecond})
	ctx := testCtx(t)

	var cursors []string
	var last remote.StreamEvent
	req := &remote.CallRequest{AgentURL: srv.URL, Skill: "probe", Message: remote.Message{Data: json.RawMessage(`{"events":2}`)}}
	for ev, err := range tr.Stream(ctx, req) {
		if err != nil {
			t.Fatalf("Stream over HTTP = %v", err)
		}
		if !ev.Done {
			cursors = append(cursors, ev.Cursor)
		}
		last = ev
	}
	if d := cmp.Diff([]string{"1.1", "1.2"}, cursors); d != "" {
		t.Errorf("stream over HTTP cursors (-want +got):\n%s", d)
	}
	jsonEq(t, "result over HTTP", last.Result, `{"events":2,"attempt":1}`)

	_, err = tr.Send(ctx, &remote.CallRequest{AgentURL: srv.URL, Skill: "probe", Message: remote.Message{Data: json.RawMessage(`{"events":0,"interrupt":"input-required"}`)}})
	var ire *remote.InputRequiredError
	if !errors.As(err, &ire) {
		t.Fatalf("Send(interrupting) over HTTP = %v, want *InputRequiredError", err)
	}
	res, err := tr.Send(ctx, &remote.CallRequest{AgentURL: srv.URL, TaskID: ire.Task.TaskID, Message: remote.Message{Text: "go on"}})
	if err != nil {
		t.Fatalf("Send(follow-up) over HTTP = %v", err)
	}
	jsonEq(t, "resumed over HTTP", res.Result, `{"resumed_with":{"text":"go on"},"checkpoint":{"step":1}}`)

	b, err := tr.SetPushConfig(ctx, srv.URL, res.TaskID, "hook", remote.PushConfig{URL: "https://example.com/hook"})
	if err != nil || b.ID != "hook" {
		t.Fatalf("SetPushConfig over HTTP = %+v, %v", b, err)
	}
	if list, err := tr.ListPushConfigs(ctx, srv.URL, res.TaskID, 0, ""); err != nil || len(list) != 1 {
		t.Errorf("ListPushConfigs over HTTP = %+v, %v; want 1", list, err)
	}
	if err := tr.DeletePushConfig(ctx, srv.URL, res.TaskID, "hook"); err != nil {
		t.Errorf("DeletePushConfig over HTTP = %v", err)
	}
	if _, err := tr.GetTask(ctx, srv.URL, sortie.NewRunID(time.Now()).String(), 0); !errors.Is(err, remote.ErrTaskNotFound) {
		t.Errorf("GetTask(unknown) over HTTP = %v, want ErrTaskNotFound", err)
	}
}
