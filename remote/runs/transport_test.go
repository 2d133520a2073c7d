package runs_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote"
)

func TestSendReturnsTheResultAndBindsTheTaskFirst(t *testing.T) {
	tr, h := newTransport(t)
	req := call(`{"events":1,"output":{"ok":true}}`)
	req.Message.Text = "hello"
	req.ContextID = "conv-1"
	var bound remote.Binding
	req.Bind = func(b remote.Binding) { bound = b }
	res, err := tr.Send(testCtx(t), req)
	if err != nil {
		t.Fatalf("Send = %v, want a result", err)
	}
	jsonEq(t, "Send result", res.Result, `{"ok":true}`)
	if bound.TaskID == "" || bound.TaskID != res.TaskID || bound.ContextID != "conv-1" {
		t.Errorf("Bind got %+v, result task %q; want the result's task in context conv-1", bound, res.TaskID)
	}
	run, err := h.Engine.Get(testCtx(t), sortie.RunID(res.TaskID))
	if err != nil {
		t.Fatalf("Get(%s) = %v", res.TaskID, err)
	}
	jsonEq(t, "run variables", run.Variables, `{"events":1,"output":{"ok":true},"text":"hello"}`)
}

func TestSendWithTheSameMessageIDStartsOneRun(t *testing.T) {
	tr, _ := newTransport(t)
	req := call(`{"events":0}`)
	req.Message.ID = "msg-1"
	a, err := tr.Send(testCtx(t), req)
	if err != nil {
		t.Fatalf("Send #1 = %v", err)
	}
	b, err := tr.Send(testCtx(t), req)
	if err != nil {
		t.Fatalf("Send #2 = %v", err)
	}
	if a.TaskID != b.TaskID {
		t.Errorf("Send twice with message ID msg-1 gave tasks %s and %s, want one", a.TaskID, b.TaskID)
	}
}

func TestStreamYieldsEventsWithCursorsThenTheResult(t *testing.T) {
	tr, _ := newTransport(t)
	var got []string
	var last remote.StreamEvent
	for ev, err := range tr.Stream(testCtx(t), call(`{"events":3}`)) {
		if err != nil {
			t.Fatalf("Stream = %v after %v", err, got)
		}
		if !ev.Done {
			got = append(got, ev.Cursor+" "+ev.Text+" "+ev.Meta["kind"].(string))
		}
		last = ev
	}
	want := []string{"1.1 event 1 of 3 progress", "1.2 event 2 of 3 progress", "1.3 event 3 of 3 progress"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Stream events (-want +got):\n%s", d)
	}
	if !last.Done {
		t.Fatalf("last stream event %+v, want Done", last)
	}
	jsonEq(t, "Stream result", last.Result, `{"events":3,"attempt":1}`)
}

func TestInterruptedTaskIsResumedByAFollowUpMessage(t *testing.T) {
	tr, _ := newTransport(t)
	_, err := tr.Send(testCtx(t), call(`{"events":1,"interrupt":"input-required"}`))
	var ire *remote.InputRequiredError
	if !errors.As(err, &ire) {
		t.Fatalf("Send(interrupting probe) = %v, want *InputRequiredError", err)
	}
	if ire.Task.Status.State != remote.StateInputRequired || ire.Task.Status.Message != "need input" {
		t.Errorf("InputRequiredError task status = %+v, want input-required with the prompt", ire.Task.Status)
	}
	follow := &remote.CallRequest{AgentURL: hostURL, TaskID: ire.Task.TaskID, Message: remote.Message{Data: json.RawMessage(`{"answer":42}`)}}
	var texts []string
	var last remote.StreamEvent
	for ev, err := range tr.Stream(testCtx(t), follow) {
		if err != nil {
			t.Fatalf("Stream(follow-up) = %v", err)
		}
		if !ev.Done {
			texts = append(texts, ev.Cursor)
		}
		last = ev
	}
	if d := cmp.Diff([]string{"2.1"}, texts); d != "" {
		t.Errorf("follow-up stream cursors (-want +got); only attempt 2's events are new:\n%s", d)
	}
	jsonEq(t, "resumed result", last.Result, `{"resumed_with":{"answer":42},"checkpoint":{"step":1}}`)
	if last.TaskID != ire.Task.TaskID {
		t.Errorf("follow-up ran task %s, want %s", last.TaskID, ire.Task.TaskID)
	}
}

func TestAuthRequiredAndFailuresAreTypedErrors(t *testing.T) {
	tr, _ := newTransport(t)
	_, err := tr.Send(testCtx(t), call(`{"events":0,"interrupt":"auth-required"}`))
	var are *remote.AuthRequiredError
	if !errors.As(err, &are) || are.Task.Status.State != remote.StateAuthRequired {
		t.Errorf("Send(auth-required probe) = %v, want *AuthRequiredError", err)
	}
	_, err = tr.Send(testCtx(t), call(`{"events":0,"fail":"boom"}`))
	var te *remote.TaskError
	if !errors.As(err, &te) || te.Task.Status.State != remote.StateFailed {
		t.Fatalf("Send(failing probe) = %v, want *TaskError in state failed", err)
	}
	if want := "boom"; !strings.Contains(te.Task.Status.Message, want) {
		t.Errorf("TaskError status message %q, want it to contain %q", te.Task.Status.Message, want)
	}
}

func TestBadInputIsRefusedNamingTheField(t *testing.T) {
	tr, _ := newTransport(t)
	cases := []struct {
		name  string
		req   remote.CallRequest
		field string
	}{
		{"no agent url", remote.CallRequest{Skill: "probe"}, "agent_url"},
		{"relative agent url", remote.CallRequest{AgentURL: "host/path", Skill: "probe"}, "agent_url"},
		{"unknown host", remote.CallRequest{AgentURL: "sortie://other", Skill: "probe"}, "agent_url"},
		{"no skill", remote.CallRequest{AgentURL: hostURL}, "skill"},
		{"unknown agent", remote.CallRequest{AgentURL: hostURL, Skill: "nope"}, "agent"},
		{"data not an object", remote.CallRequest{AgentURL: hostURL, Skill: "probe", Message: remote.Message{Data: json.RawMessage(`[1]`)}}, "message.data"},
		{"data not JSON", remote.CallRequest{AgentURL: hostURL, Skill: "probe", Message: remote.Message{Data: json.RawMessage(`{`)}}, "message.data"},
		{"text twice", remote.CallRequest{AgentURL: hostURL, Skill: "probe", Message: remote.Message{Text: "a", Data: json.RawMessage(`{"text":"b"}`)}}, "message.text"},
		{"task id not a run", remote.CallRequest{AgentURL: hostURL, TaskID: "xyz"}, "task_id"},
	}
	for _, c := range cases {
		_, err := tr.Send(testCtx(t), &c.req)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%s: Send = %v, want a ValidationError for field %q", c.name, err, c.field)
		}
	}
}

func TestUnknownTaskWrapsErrTaskNotFound(t *testing.T) {
	tr, _ := newTransport(t)
	id := sortie.NewRunID(time.Now()).String()
	if _, err := tr.GetTask(testCtx(t), hostURL, id, 0); !errors.Is(err, remote.ErrTaskNotFound) {
		t.Errorf("GetTask(unknown) = %v, want ErrTaskNotFound", err)
	}
	if err := tr.Cancel(testCtx(t), hostURL, id); !errors.Is(err, remote.ErrTaskNotFound) {
		t.Errorf("Cancel(unknown) = %v, want ErrTaskNotFound", err)
	}
	_, err := tr.Send(testCtx(t), &remote.CallRequest{AgentURL: hostURL, TaskID: id})
	if !errors.Is(err, remote.ErrTaskNotFound) {
		t.Errorf("Send(follow-up of unknown task) = %v, want ErrTaskNotFound", err)
	}
}
