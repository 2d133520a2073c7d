package runs_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/remote"
)

func TestSendTaskNonBlockingThenCancel(t *testing.T) {
	tr, h := newTransport(t)
	ctx := testCtx(t)
	snap, err := tr.SendTask(ctx, call(`{"events":0,"until_cancelled":true}`), false)
	if err != nil {
		t.Fatalf("SendTask(blocking=false) = %v", err)
	}
	if snap.Terminal() {
		t.Fatalf("SendTask(blocking=false) returned a terminal task %+v", snap.Status)
	}
	testwait.Until(t, "the run to be working", 10*time.Second, func() bool {
		s, err := tr.GetTask(ctx, hostURL, snap.TaskID, 0)
		return err == nil && s.Status.State == remote.StateWorking
	})
	if err := tr.Cancel(ctx, hostURL, snap.TaskID); err != nil {
		t.Fatalf("Cancel(%s) = %v", snap.TaskID, err)
	}
	run := h.Wait(t, sortie.RunID(snap.TaskID))
	if run.State != sortie.StateCancelled {
		t.Errorf("run after Cancel is %s, want cancelled", run.State)
	}
	if err := tr.Cancel(ctx, hostURL, snap.TaskID); err != nil {
		t.Errorf("Cancel of a cancelled task = %v, want nil", err)
	}
}

func TestSendTaskBlockingReturnsTheFinalSnapshot(t *testing.T) {
	tr, _ := newTransport(t)
	snap, err := tr.SendTask(testCtx(t), call(`{"events":1,"output":"done"}`), true)
	if err != nil {
		t.Fatalf("SendTask(blocking) = %v", err)
	}
	if snap.Status.State != remote.StateCompleted {
		t.Fatalf("SendTask(blocking) state %s, want completed", snap.Status.State)
	}
	jsonEq(t, "snapshot result", snap.Result, `"done"`)
	if len(snap.Artifacts) != 1 || snap.Artifacts[0].ID != "result" {
		t.Errorf("artifacts = %+v, want the result artifact", snap.Artifacts)
	}
	one, err := tr.GetTask(testCtx(t), hostURL, snap.TaskID, 1)
	if err != nil {
		t.Fatalf("GetTask(history 1) = %v", err)
	}
	if len(one.History) != 1 {
		t.Errorf("GetTask(history 1) gave %d history entries, want 1", len(one.History))
	}
}

func TestListTasksByContextAndStateAcrossPages(t *testing.T) {
	tr, _ := newTransport(t)
	ctx := testCtx(t)
	want := map[string]bool{}
	for i := range 3 {
		req := call(`{"events":0}`)
		req.ContextID = "batch"
		res, err := tr.Send(ctx, req)
		if err != nil {
			t.Fatalf("Send #%d = %v", i, err)
		}
		want[res.TaskID] = true
	}
	other := call(`{"events":0}`)
	other.ContextID = "other"
	if _, err := tr.Send(ctx, other); err != nil {
		t.Fatalf("Send(other context) = %v", err)
	}
	got := map[string]bool{}
	q := &remote.ListTasksRequest{AgentURL: hostURL, ContextID: "batch", State: remote.StateCompleted, PageSize: 2}
	for pages := 0; ; pages++ {
		page, err := tr.ListTasks(ctx, q)
		if err != nil {
			t.Fatalf("ListTasks(page %d) = %v", pages, err)
		}
		for _, s := range page.Tasks {
			got[s.TaskID] = true
			if s.Artifacts != nil {
				t.Errorf("ListTasks without IncludeArtifacts gave artifacts %+v", s.Artifacts)
			}
		}
		if page.NextPageToken == "" {
			if pages != 1 {
				t.Errorf("3 tasks at page size 2 took %d pages, want 2", pages+1)
			}
			break
		}
		q.PageToken = page.NextPageToken
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("listed tasks of context batch (-want +got):\n%s", d)
	}
	_, err := tr.ListTasks(ctx, &remote.ListTasksRequest{AgentURL: hostURL, State: "done"})
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "state" {
		t.Errorf("ListTasks(state done) = %v, want a ValidationError for state", err)
	}
}

func TestSubscribeTaskResumesAfterACursor(t *testing.T) {
	tr, _ := newTransport(t)
	ctx := testCtx(t)
	res, err := tr.Send(ctx, call(`{"events":5}`))
	if err != nil {
		t.Fatalf("Send = %v", err)
	}
	var kinds, cursors []string
	var last remote.TaskEvent
	for ev, err := range tr.SubscribeTask(ctx, &remote.SubscribeRequest{AgentURL: hostURL, TaskID: res.TaskID, After: "1.2"}) {
		if err != nil {
			t.Fatalf("SubscribeTask(after 1.2) = %v", err)
		}
		kinds = append(kinds, ev.Kind)
		if ev.Cursor != "" {
			cursors = append(cursors, ev.Cursor)
		}
		last = ev
	}
	if d := cmp.Diff([]string{"1.3", "1.4", "1.5"}, cursors); d != "" {
		t.Errorf("events after cursor 1.2 (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"task", "status", "status", "status", "status"}, kinds); d != "" {
		t.Errorf("event kinds (-want +got):\n%s", d)
	}
	if !last.Done || last.Status.State != remote.StateCompleted {
		t.Errorf("last event %+v, want Done and completed", last)
	}
	var n int
	for ev, err := range tr.SubscribeTask(ctx, &remote.SubscribeRequest{AgentURL: hostURL, TaskID: res.TaskID}) {
		if err != nil {
			t.Fatalf("SubscribeTask(no cursor) = %v", err)
		}
		if ev.Cursor != "" {
			t.Errorf("SubscribeTask without a cursor replayed event %s of a finished task", ev.Cursor)
		}
		n++
	}
	if n != 2 {
		t.Errorf("SubscribeTask(finished task, no cursor) gave %d events, want the snapshot and the final status", n)
	}
	_, err = first(tr.SubscribeTask(ctx, &remote.SubscribeRequest{AgentURL: hostURL, TaskID: res.TaskID, After: "x"}))
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "after" {
		t.Errorf("SubscribeTask(after x) = %v, want a ValidationError for after", err)
	}
}

func first[T any](seq func(func(T, error) bool)) (T, error) {
	var zero T
	for v, err := range seq {
		return v, err
	}
	return zero, nil
}

func TestPushConfigCRUD(t *testing.T) {
	tr, _ := newTransport(t)
	ctx := testCtx(t)
	res, err := tr.Send(ctx, call(`{"events":0}`))
	if err != nil {
		t.Fatalf("Send = %v", err)
	}
	b, err := tr.SetPushConfig(ctx, hostURL, res.TaskID, "hook-1", remote.PushConfig{URL: "https://example.com/hook"})
	if err != nil {
		t.Fatalf("SetPushConfig = %v", err)
	}
	want := remote.PushBinding{ID: "hook-1", TaskID: res.TaskID, Config: remote.PushConfig{URL: "https://example.com/hook"}}
	if d := cmp.Diff(want, *b); d != "" {
		t.Errorf("SetPushConfig (-want +got):\n%s", d)
	}
	got, err := tr.GetPushConfig(ctx, hostURL, res.TaskID, "hook-1")
	if err != nil || cmp.Diff(want, *got) != "" {
		t.Errorf("GetPushConfig = %+v, %v; want %+v", got, err, want)
	}
	gen, err := tr.SetPushConfig(ctx, hostURL, res.TaskID, "", remote.PushConfig{URL: "https://example.com/two"})
	if err != nil || gen.ID == "" {
		t.Fatalf("SetPushConfig(no ID) = %+v, %v; want a generated ID", gen, err)
	}
	list, err := tr.ListPushConfigs(ctx, hostURL, res.TaskID, 0, "")
	if err != nil || len(list) != 2 {
		t.Fatalf("ListPushConfigs = %+v, %v; want 2", list, err)
	}
	if err := tr.DeletePushConfig(ctx, hostURL, res.TaskID, "hook-1"); err != nil {
		t.Fatalf("DeletePushConfig = %v", err)
	}
	if _, err := tr.GetPushConfig(ctx, hostURL, res.TaskID, "hook-1"); !errors.Is(err, remote.ErrTaskNotFound) {
		t.Errorf("GetPushConfig after delete = %v, want ErrTaskNotFound", err)
	}
	for field, cfg := range map[string]remote.PushConfig{
		"token":          {URL: "https://example.com/h", Token: "t0k"},
		"authentication": {URL: "https://example.com/h", Auth: &remote.PushAuth{Scheme: "Bearer", Credentials: "secret"}},
		"url":            {URL: "ftp://example.com/h"},
	} {
		_, err := tr.SetPushConfig(ctx, hostURL, res.TaskID, "bad", cfg)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("SetPushConfig(bad %s) = %v, want a ValidationError for %s", field, err, field)
		}
		if ve != nil && (strings.Contains(err.Error(), "t0k") || strings.Contains(err.Error(), "secret")) {
			t.Errorf("SetPushConfig error %q shows the secret", err)
		}
	}
}
