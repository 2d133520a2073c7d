package a2a_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote/remotetest"
)

func TestGetTaskWithAHistoryLength(t *testing.T) {
	r := newRig(t, nil, nil)
	task := send(t, r, msg(t, `{"events":0,"interrupt":"input-required"}`, "probe"), false)
	got, err := r.client.GetTask(testCtx(t), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatalf("GetTask = %v", err)
	}
	if len(got.History) != 2 || got.History[1].Role != a2a.MessageRoleAgent || got.History[1].Parts[0].Text() != "need input" {
		t.Errorf("GetTask history %+v, want the message and the agent's prompt", got.History)
	}
	one := 1
	got, err = r.client.GetTask(testCtx(t), &a2a.GetTaskRequest{ID: task.ID, HistoryLength: &one})
	if err != nil || len(got.History) != 1 || got.History[0].Role != a2a.MessageRoleAgent {
		t.Errorf("GetTask(historyLength 1) = %+v, %v; want the last entry only", got, err)
	}
	_, err = r.client.GetTask(testCtx(t), &a2a.GetTaskRequest{ID: a2a.TaskID(sortie.NewRunID(time.Now()))})
	if !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask(unknown run) = %v, want ErrTaskNotFound", err)
	}
	_, err = r.client.GetTask(testCtx(t), &a2a.GetTaskRequest{ID: "0190f0c1-not-a-run"})
	if !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask(foreign ID) = %v, want ErrTaskNotFound", err)
	}
	neg := -1
	_, err = r.client.GetTask(testCtx(t), &a2a.GetTaskRequest{ID: task.ID, HistoryLength: &neg})
	wantInvalid(t, "GetTask(historyLength -1)", err, "historyLength")
}

func TestListTasksAcrossPages(t *testing.T) {
	r := newRig(t, nil, nil)
	want := map[a2a.TaskID]bool{}
	for range 5 {
		m := msg(t, `{"events":0}`, "probe")
		m.ContextID = "batch"
		want[send(t, r, m, false).ID] = true
	}
	send(t, r, msg(t, `{"events":0}`, "probe"), false) // another context
	got := map[a2a.TaskID]bool{}
	req := &a2a.ListTasksRequest{ContextID: "batch", Status: a2a.TaskStateCompleted, PageSize: 2}
	pages := 0
	for {
		page, err := r.client.ListTasks(testCtx(t), req)
		if err != nil {
			t.Fatalf("ListTasks(page %d) = %v", pages+1, err)
		}
		pages++
		if page.TotalSize != 5 || page.PageSize != 2 {
			t.Errorf("page %d total %d size %d, want total 5 size 2", pages, page.TotalSize, page.PageSize)
		}
		for _, task := range page.Tasks {
			got[task.ID] = true
		}
		if page.NextPageToken == "" {
			break
		}
		req.PageToken = page.NextPageToken
	}
	if pages != 3 {
		t.Errorf("5 tasks at page size 2 came in %d pages, want 3", pages)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("tasks of context batch (-want +got):\n%s", d)
	}
	_, err := r.client.ListTasks(testCtx(t), &a2a.ListTasksRequest{PageSize: 101})
	wantInvalid(t, "ListTasks(pageSize 101)", err, "pageSize")
	_, err = r.client.ListTasks(testCtx(t), &a2a.ListTasksRequest{Status: "TASK_STATE_DONE"})
	wantInvalid(t, "ListTasks(status TASK_STATE_DONE)", err, "status")
	_, err = r.client.ListTasks(testCtx(t), &a2a.ListTasksRequest{PageToken: "garbage"})
	wantInvalid(t, "ListTasks(pageToken garbage)", err, "pageToken")
}

func TestCancelTask(t *testing.T) {
	r := newRig(t, nil, nil)
	task := send(t, r, msg(t, `{"events":0,"until_cancelled":true}`, "probe"), true)
	got, err := r.client.CancelTask(testCtx(t), &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatalf("CancelTask = %v", err)
	}
	if got.Status.State != a2a.TaskStateCanceled {
		t.Errorf("CancelTask returned state %s, want canceled", got.Status.State)
	}
	again, err := r.client.CancelTask(testCtx(t), &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || again.ID != task.ID || again.Status.State != a2a.TaskStateCanceled {
		t.Errorf("CancelTask(cancelled task) = %+v, %v; want the canceled task", again, err)
	}
	done := send(t, r, msg(t, `{"events":0}`, "probe"), false)
	if _, err = r.client.CancelTask(testCtx(t), &a2a.CancelTaskRequest{ID: done.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("CancelTask(completed task) = %v, want ErrTaskNotCancelable", err)
	}
}

func TestInterruptedTaskResumesWithAFollowUp(t *testing.T) {
	r := newRig(t, nil, nil)
	task := send(t, r, msg(t, `{"events":1,"interrupt":"input-required"}`, "probe"), false)
	if task.Status.State != a2a.TaskStateInputRequired || task.Status.Message == nil || task.Status.Message.Parts[0].Text() != "need input" {
		t.Fatalf("interrupting task status %+v, want input-required with the prompt", task.Status)
	}
	follow := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewDataPart(map[string]any{"answer": 42}))
	done := send(t, r, follow, false)
	if done.ID != task.ID || done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("follow-up gave task %s in %s, want %s completed", done.ID, done.Status.State, task.ID)
	}
	jsonEq(t, "resumed result", resultOf(t, done), `{"resumed_with":{"answer":42},"checkpoint":{"step":1}}`)
	again := send(t, r, follow, false)
	run, err := r.host.Engine.Get(testCtx(t), sortie.RunID(task.ID))
	if err != nil || again.ID != task.ID || run.Attempt != 2 {
		t.Errorf("repeated follow-up: task %s, run attempt %d (%v); want the same task, 2 attempts", again.ID, run.Attempt, err)
	}
	other := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("again"))
	_, err = r.client.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: other})
	wantInvalid(t, "SendMessage(new follow-up to a completed task)", err, "message.taskId")
}

func TestAuthRequiredTaskResumesOverAStream(t *testing.T) {
	r := newRig(t, nil, nil)
	task := send(t, r, msg(t, `{"events":1,"interrupt":"auth-required"}`, "probe"), false)
	if task.Status.State != a2a.TaskStateAuthRequired {
		t.Fatalf("task state %s, want auth-required", task.Status.State)
	}
	var got []string
	follow := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("authorised"))
	for ev, err := range r.client.SendStreamingMessage(testCtx(t), &a2a.SendMessageRequest{Message: follow}) {
		if err != nil {
			t.Fatalf("SendStreamingMessage(follow-up) = %v", err)
		}
		got = append(got, describe(ev))
	}
	want := []string{"task TASK_STATE_WORKING", "status TASK_STATE_WORKING 2.1", "artifact result", "status TASK_STATE_COMPLETED <nil>"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("follow-up stream (-want +got; only attempt 2's events):\n%s", d)
	}
}

func TestTasksSurviveAHostRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sortie.db")
	first := remotetest.New(t, &remotetest.Options{SQLitePath: db})
	r1 := serve(t, first, first.Engine, nil)
	task := send(t, r1, msg(t, `{"events":2,"output":{"kept":true}}`, "probe"), false)
	r1.srv.Close()
	first.Close()

	second := remotetest.New(t, &remotetest.Options{SQLitePath: db})
	r2 := serve(t, second, second.Engine, nil)
	got, err := r2.client.GetTask(testCtx(t), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatalf("GetTask after the restart = %v", err)
	}
	if got.Status.State != a2a.TaskStateCompleted || got.ContextID != task.ContextID {
		t.Errorf("task after the restart %s in %q, want completed in %q", got.Status.State, got.ContextID, task.ContextID)
	}
	jsonEq(t, "result after the restart", resultOf(t, got), `{"kept":true}`)
}

func TestTheRESTBindingServesTheSameTasks(t *testing.T) {
	r := newRig(t, nil, nil)
	c := newClient(t, r.srv.URL, a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{a2a.TransportProtocolHTTPJSON}}))
	res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: msg(t, `{"events":0,"output":"rest"}`, "probe")})
	if err != nil {
		t.Fatalf("SendMessage over REST = %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("SendMessage over REST = %T %+v, want a completed task", res, res)
	}
	got, err := r.client.GetTask(testCtx(t), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || resultOf(t, got) != `"rest"` {
		t.Errorf("GetTask over JSON-RPC of a REST task = %+v, %v", got, err)
	}
	_, err = c.GetTask(testCtx(t), &a2a.GetTaskRequest{ID: a2a.TaskID(sortie.NewRunID(time.Now()))})
	if !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask(unknown) over REST = %v, want ErrTaskNotFound", err)
	}
}
