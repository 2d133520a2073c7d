package a2a_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/google/go-cmp/cmp"

	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

// describe renders an event as "kind state cursor" for comparisons.
func describe(ev a2a.Event) string {
	switch e := ev.(type) {
	case *a2a.Task:
		return "task " + string(e.Status.State)
	case *a2a.TaskStatusUpdateEvent:
		return fmt.Sprintf("status %s %v", e.Status.State, e.Metadata[a2aserver.MetaCursor])
	case *a2a.TaskArtifactUpdateEvent:
		return "artifact " + string(e.Artifact.ID)
	}
	return fmt.Sprintf("%T", ev)
}

func TestSendStreamingMessageStreamsEventsThenTheResult(t *testing.T) {
	r := newRig(t, nil, nil)
	var got []string
	for ev, err := range r.client.SendStreamingMessage(testCtx(t), &a2a.SendMessageRequest{Message: msg(t, `{"events":3}`, "probe")}) {
		if err != nil {
			t.Fatalf("SendStreamingMessage = %v after %v", err, got)
		}
		got = append(got, describe(ev))
	}
	want := []string{"task TASK_STATE_SUBMITTED", "status TASK_STATE_WORKING 1.1", "status TASK_STATE_WORKING 1.2",
		"status TASK_STATE_WORKING 1.3", "artifact result", "status TASK_STATE_COMPLETED <nil>"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stream (-want +got):\n%s", d)
	}
}

func TestSubscribeAgainAfterADisconnectLosesNothing(t *testing.T) {
	r := newRig(t, nil, nil)
	ctx := testCtx(t)
	seen := map[string]int{}
	var taskID a2a.TaskID
	var last string
	for ev, err := range r.client.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg(t, `{"events":8,"interval_ms":20}`, "probe")}) {
		if err != nil {
			t.Fatalf("SendStreamingMessage = %v", err)
		}
		taskID = ev.TaskInfo().TaskID
		if c, ok := ev.Meta()[a2aserver.MetaCursor].(string); ok {
			seen[c]++
			last = c
		}
		if len(seen) == 2 {
			break // disconnect
		}
	}
	resumed := a2aclient.AttachServiceParams(ctx, a2aclient.ServiceParams{a2aserver.ResumeAfterParam: {last}})
	var final a2a.TaskState
	for ev, err := range r.client.SubscribeToTask(resumed, &a2a.SubscribeToTaskRequest{ID: taskID}) {
		if err != nil {
			t.Fatalf("SubscribeToTask(resume after %s) = %v", last, err)
		}
		if c, ok := ev.Meta()[a2aserver.MetaCursor].(string); ok {
			seen[c]++
		}
		if s, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			final = s.Status.State
		}
	}
	want := map[string]int{}
	for i := 1; i <= 8; i++ {
		want[fmt.Sprintf("1.%d", i)] = 1
	}
	if d := cmp.Diff(want, seen); d != "" {
		t.Errorf("events seen over both connections (-want +got; each once):\n%s", d)
	}
	if final != a2a.TaskStateCompleted {
		t.Errorf("last status after resuming = %s, want completed", final)
	}
	_, err := first(r.client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: taskID}))
	if !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("SubscribeToTask(finished task, no cursor) = %v, want ErrUnsupportedOperation", err)
	}
	bad := a2aclient.AttachServiceParams(ctx, a2aclient.ServiceParams{a2aserver.ResumeAfterParam: {"one"}})
	_, err = first(r.client.SubscribeToTask(bad, &a2a.SubscribeToTaskRequest{ID: taskID}))
	wantInvalid(t, "SubscribeToTask(bad cursor)", err, a2aserver.ResumeAfterParam)
}

func TestSubscribeWithoutACursorStartsWithTheTask(t *testing.T) {
	r := newRig(t, nil, nil)
	ctx := testCtx(t)
	task := send(t, r, msg(t, `{"events":0,"until_cancelled":true,"interval_ms":10}`, "probe"), true)
	var got []string
	for ev, err := range r.client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatalf("SubscribeToTask = %v", err)
		}
		got = append(got, describe(ev))
		if len(got) == 3 {
			if _, err := r.client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID}); err != nil {
				t.Fatalf("CancelTask = %v", err)
			}
		}
	}
	if len(got) < 4 || !strings.HasPrefix(got[0], "task ") || got[len(got)-1] != "status TASK_STATE_CANCELED <nil>" {
		t.Errorf("subscription %v, want the task first, ticks, and the cancelled status last", got)
	}
}

func first(seq func(func(a2a.Event, error) bool)) (a2a.Event, error) {
	for ev, err := range seq {
		if err != nil {
			return nil, err
		}
		return ev, nil
	}
	return nil, nil
}
