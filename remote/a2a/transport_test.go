package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/remote"
	ra2a "github.com/sortie-run/sortie/remote/a2a"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

func TestNamesMatchTheServer(t *testing.T) {
	got := []string{ra2a.SkillKey, ra2a.ResumeAfterParam, ra2a.MetaCursor, ra2a.MetaConfigRefs}
	want := []string{a2aserver.SkillKey, a2aserver.ResumeAfterParam, a2aserver.MetaCursor, a2aserver.MetaConfigRefs}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("client and server names (-server +client):\n%s", d)
	}
}

func TestSendReturnsTheResult(t *testing.T) {
	url, tr, _ := newAgent(t)
	req := call(url, `{"events":1,"output":{"ok":1}}`)
	req.Message.Text = "hi"
	var bound remote.Binding
	req.Bind = func(b remote.Binding) { bound = b }
	res, err := tr.Send(testCtx(t), req)
	if err != nil {
		t.Fatalf("Send = %v", err)
	}
	jsonEq(t, "Send result", res.Result, `{"ok":1}`)
	if bound.TaskID != res.TaskID || res.TaskID == "" {
		t.Errorf("Bind saw task %q, result task %q; want the same", bound.TaskID, res.TaskID)
	}
	snap, err := tr.GetTask(testCtx(t), url, res.TaskID, 0)
	if err != nil {
		t.Fatalf("GetTask = %v", err)
	}
	if len(snap.History) == 0 || snap.History[0].Text != "hi" {
		t.Errorf("GetTask history %+v, want the message's text first", snap.History)
	}
}

func TestStreamYieldsProgressThenTheResult(t *testing.T) {
	url, tr, _ := newAgent(t)
	var cursors []string
	var last remote.StreamEvent
	for ev, err := range tr.Stream(testCtx(t), call(url, `{"events":3}`)) {
		if err != nil {
			t.Fatalf("Stream = %v", err)
		}
		if !ev.Done {
			cursors = append(cursors, ev.Cursor)
		}
		last = ev
	}
	if d := cmp.Diff([]string{"1.1", "1.2", "1.3"}, cursors); d != "" {
		t.Errorf("stream cursors (-want +got):\n%s", d)
	}
	if !last.Done {
		t.Fatalf("last event %+v, want Done", last)
	}
	jsonEq(t, "Stream result", last.Result, `{"events":3,"attempt":1}`)
}

func TestInterruptsAreTypedAndResumedByAFollowUp(t *testing.T) {
	url, tr, _ := newAgent(t)
	_, err := tr.Send(testCtx(t), call(url, `{"events":0,"interrupt":"input-required"}`))
	var ire *remote.InputRequiredError
	if !errors.As(err, &ire) || ire.Task.Status.Message != "need input" {
		t.Fatalf("Send(interrupting) = %v, want *InputRequiredError with the prompt", err)
	}
	var last remote.StreamEvent
	follow := &remote.CallRequest{AgentURL: url, TaskID: ire.Task.TaskID, Message: remote.Message{Data: json.RawMessage(`{"a":1}`)}}
	for ev, err := range tr.Stream(testCtx(t), follow) {
		if err != nil {
			t.Fatalf("Stream(follow-up) = %v", err)
		}
		last = ev
	}
	jsonEq(t, "resumed result", last.Result, `{"resumed_with":{"a":1},"checkpoint":{"step":1}}`)

	_, err = tr.Send(testCtx(t), call(url, `{"events":0,"interrupt":"auth-required"}`))
	var are *remote.AuthRequiredError
	if !errors.As(err, &are) {
		t.Errorf("Send(auth-required) = %v, want *AuthRequiredError", err)
	}
	_, err = tr.Send(testCtx(t), call(url, `{"events":0,"fail":"bad"}`))
	var te *remote.TaskError
	if !errors.As(err, &te) || te.Task.Status.State != remote.StateFailed {
		t.Errorf("Send(failing) = %v, want *TaskError failed", err)
	}
}

func TestSendTaskCancelAndList(t *testing.T) {
	url, tr, _ := newAgent(t)
	ctx := testCtx(t)
	snap, err := tr.SendTask(ctx, call(url, `{"events":0,"until_cancelled":true}`), false)
	if err != nil || snap.Terminal() {
		t.Fatalf("SendTask(non-blocking) = %+v, %v; want a live task", snap, err)
	}
	if err := tr.Cancel(ctx, url, snap.TaskID); err != nil {
		t.Fatalf("Cancel = %v", err)
	}
	testwait.Until(t, "the task to be cancelled", 10*time.Second, func() bool {
		s, err := tr.GetTask(ctx, url, snap.TaskID, 0)
		return err == nil && s.Status.State == remote.StateCancelled
	})
	if err := tr.Cancel(ctx, url, snap.TaskID); err != nil {
		t.Errorf("Cancel(cancelled task) = %v, want nil", err)
	}
	for range 2 {
		req := call(url, `{"events":0}`)
		req.ContextID = "two"
		if _, err := tr.SendTask(ctx, req, true); err != nil {
			t.Fatalf("SendTask(blocking) = %v", err)
		}
	}
	page, err := tr.ListTasks(ctx, &remote.ListTasksRequest{AgentURL: url, ContextID: "two", PageSize: 1})
	if err != nil {
		t.Fatalf("ListTasks = %v", err)
	}
	if len(page.Tasks) != 1 || page.TotalSize != 2 || page.NextPageToken == "" {
		t.Errorf("ListTasks(page size 1) = %d tasks, total %d, next %q; want 1 of 2 and a next page", len(page.Tasks), page.TotalSize, page.NextPageToken)
	}
	if _, err := tr.GetTask(ctx, url, sortie.NewRunID(time.Now()).String(), 0); !errors.Is(err, remote.ErrTaskNotFound) {
		t.Errorf("GetTask(unknown) = %v, want ErrTaskNotFound", err)
	}
}

func TestSubscribeTaskResumesAfterACursor(t *testing.T) {
	url, tr, _ := newAgent(t)
	ctx := testCtx(t)
	res, err := tr.Send(ctx, call(url, `{"events":4}`))
	if err != nil {
		t.Fatalf("Send = %v", err)
	}
	var cursors []string
	var last remote.TaskEvent
	for ev, err := range tr.SubscribeTask(ctx, &remote.SubscribeRequest{AgentURL: url, TaskID: res.TaskID, After: "1.2"}) {
		if err != nil {
			t.Fatalf("SubscribeTask(after 1.2) = %v", err)
		}
		if ev.Cursor != "" {
			cursors = append(cursors, ev.Cursor)
		}
		last = ev
	}
	if d := cmp.Diff([]string{"1.3", "1.4"}, cursors); d != "" {
		t.Errorf("events after 1.2 (-want +got):\n%s", d)
	}
	if !last.Done || last.Status == nil || last.Status.State != remote.StateCompleted {
		t.Errorf("last event %+v, want Done with status completed", last)
	}
	for _, err := range tr.SubscribeTask(ctx, &remote.SubscribeRequest{AgentURL: url, TaskID: res.TaskID}) {
		if !errors.Is(err, remote.ErrUnsupported) {
			t.Errorf("SubscribeTask(finished, no cursor) = %v, want ErrUnsupported", err)
		}
		break
	}
}

func TestPushConfigs(t *testing.T) {
	url, tr, _ := newAgent(t)
	ctx := testCtx(t)
	res, err := tr.Send(ctx, call(url, `{"events":0}`))
	if err != nil {
		t.Fatalf("Send = %v", err)
	}
	b, err := tr.SetPushConfig(ctx, url, res.TaskID, "h1", remote.PushConfig{URL: "https://example.com/h"})
	if err != nil || b.ID != "h1" || b.Config.URL != "https://example.com/h" {
		t.Fatalf("SetPushConfig = %+v, %v", b, err)
	}
	if got, err := tr.GetPushConfig(ctx, url, res.TaskID, "h1"); err != nil || cmp.Diff(b, got) != "" {
		t.Errorf("GetPushConfig = %+v, %v; want %+v", got, err, b)
	}
	if list, err := tr.ListPushConfigs(ctx, url, res.TaskID, 0, ""); err != nil || len(list) != 1 {
		t.Errorf("ListPushConfigs = %+v, %v; want 1", list, err)
	}
	if err := tr.DeletePushConfig(ctx, url, res.TaskID, "h1"); err != nil {
		t.Errorf("DeletePushConfig = %v", err)
	}
	_, err = tr.SetPushConfig(ctx, url, res.TaskID, "h2", remote.PushConfig{URL: "https://example.com/h", Auth: &remote.PushAuth{Scheme: "Bearer", Credentials: "cr3d"}})
	if err == nil || !strings.Contains(err.Error(), "invalid authentication") || strings.Contains(err.Error(), "cr3d") {
		t.Errorf("SetPushConfig(with credentials) = %v, want refused naming authentication, without the secret", err)
	}
}

func TestNodeOverA2AMirrorsCancellation(t *testing.T) {
	url, tr, h := newAgent(t)
	var mu sync.Mutex
	var taskID string
	n := &remote.Node{Name: "a2a", Transport: tr, Skill: "probe", AgentURL: url, Streaming: true,
		Observer: remote.ObserverFunc(func(_ context.Context, o remote.Observation) {
			mu.Lock()
			defer mu.Unlock()
			if o.Kind == remote.RemoteStreamEvent && taskID == "" {
				taskID = o.TaskID
			}
		})}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := n.Call(ctx, remote.Message{Data: json.RawMessage(`{"events":0,"until_cancelled":true}`)}, nil)
		errc <- err
	}()
	testwait.Until(t, "a stream event of the remote task", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return taskID != ""
	})
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Call after cancel = %v, want context.Canceled", err)
	}
	if run := h.Wait(t, sortie.RunID(taskID)); run.State != sortie.StateCancelled {
		t.Errorf("remote task after the caller cancelled is %s, want cancelled", run.State)
	}
}

// A transport without a destination policy reaches no agent: the card
// request is refused before it is sent.
func TestTheDefaultClientGoesThroughTheDestinationPolicy(t *testing.T) {
	url, _, h := newAgent(t)
	tr := ra2a.New(nil)
	t.Cleanup(func() { _ = tr.Close() })
	_, err := tr.Send(testCtx(t), call(url, `{"events":0}`))
	if !errors.Is(err, destination.ErrRefused) {
		t.Errorf("Send with the default options = %v, want destination.ErrRefused", err)
	}
	if page, err := h.Engine.List(testCtx(t), sortie.ListQuery{}); err != nil || len(page.Runs) != 0 {
		t.Errorf("runs on the agent = %d (%v), want none", len(page.Runs), err)
	}
	bad := ra2a.New(&ra2a.Options{Destinations: &destination.Policy{Allow: []string{"https://x"}}})
	var ve *sortie.ValidationError
	if _, err := bad.Send(testCtx(t), call(url, `{}`)); !errors.As(err, &ve) {
		t.Errorf("Send with an invalid policy = %v, want a ValidationError", err)
	}
}
