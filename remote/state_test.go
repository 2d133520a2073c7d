package remote_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote"
)

func TestTerminalStates(t *testing.T) {
	var terminal []remote.TaskState
	for _, s := range []string{"unspecified", "submitted", "working", "input-required", "auth-required",
		"completed", "failed", "cancelled", "rejected"} {
		st, err := remote.ParseTaskState(s)
		if err != nil {
			t.Fatalf("ParseTaskState(%q) = %v", s, err)
		}
		if st.Terminal() {
			terminal = append(terminal, st)
		}
		if st.Final() != (st.Terminal() || st.Interrupted()) {
			t.Errorf("%s.Final() = %v, want terminal or interrupted", st, st.Final())
		}
	}
	if d := cmp.Diff(remote.TerminalStates(), terminal); d != "" {
		t.Errorf("terminal states (-want +got):\n%s", d)
	}
	var ve *sortie.ValidationError
	if _, err := remote.ParseTaskState("TASK_STATE_WORKING"); !errors.As(err, &ve) || ve.Field != "state" {
		t.Errorf("ParseTaskState(TASK_STATE_WORKING) = %v, want a ValidationError for state", err)
	}
}

func TestOutcomeError(t *testing.T) {
	snap := func(s remote.TaskState) *remote.TaskSnapshot {
		return &remote.TaskSnapshot{TaskID: "t1", Status: remote.TaskStatus{State: s, Message: "why"}}
	}
	if err := remote.OutcomeError(snap(remote.StateCompleted)); err != nil {
		t.Errorf("OutcomeError(completed) = %v, want nil", err)
	}
	var ire *remote.InputRequiredError
	if err := remote.OutcomeError(snap(remote.StateInputRequired)); !errors.As(err, &ire) || ire.Task.TaskID != "t1" {
		t.Errorf("OutcomeError(input-required) = %v, want *InputRequiredError with the task", err)
	}
	var are *remote.AuthRequiredError
	if err := remote.OutcomeError(snap(remote.StateAuthRequired)); !errors.As(err, &are) {
		t.Errorf("OutcomeError(auth-required) = %v, want *AuthRequiredError", err)
	}
	for _, s := range []remote.TaskState{remote.StateFailed, remote.StateCancelled, remote.StateRejected, remote.StateWorking} {
		var te *remote.TaskError
		err := remote.OutcomeError(snap(s))
		if !errors.As(err, &te) || te.Error() != "remote task t1 "+string(s)+": why" {
			t.Errorf("OutcomeError(%s) = %v, want *TaskError saying the state and reason", s, err)
		}
	}
}

func TestCallRequestValidate(t *testing.T) {
	ok := remote.CallRequest{AgentURL: "https://agent.example", Skill: "s"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v", ok, err)
	}
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'k'
	}
	cases := map[string]remote.CallRequest{
		"agent_url":    {Skill: "s"},
		"skill":        {AgentURL: "https://agent.example"},
		"message.id":   {AgentURL: "https://agent.example", Skill: "s", Message: remote.Message{ID: string(long)}},
		"message.data": {AgentURL: "https://agent.example", Skill: "s", Message: remote.Message{Data: []byte("{")}},
		"timeout":      {AgentURL: "https://agent.example", Skill: "s", Timeout: -1},
	}
	for field, req := range cases {
		var ve *sortie.ValidationError
		if err := req.Validate(); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("Validate(%+v) = %v, want a ValidationError for %s", req, err, field)
		}
	}
}
