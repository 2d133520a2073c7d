package remote

import (
	"context"
	"encoding/json"
	"iter"
	"net/url"
	"unicode/utf8"

	"github.com/sortie-run/sortie"
)

// Transport is the minimal remote invocation surface (the remote-task
// API's RemoteTransport). Implementations return [*sortie.ValidationError]
// for bad input (see [CallRequest.Validate]), the typed errors of this
// package for paused, failed, cancelled and rejected tasks, wrap
// [ErrTaskNotFound] for an unknown task, and pass transport failures and
// ctx errors through.
type Transport interface {
	// Send performs a unary call: it waits for the remote task to finish
	// and returns its result. A task paused for input or authorisation
	// gives [*InputRequiredError] or [*AuthRequiredError]; a failed,
	// cancelled or rejected one [*TaskError].
	Send(ctx context.Context, req *CallRequest) (*CallResult, error)
	// Stream performs a call that yields events as the remote produces
	// them; the last has Done set and, for a completed task, the Result.
	// A paused, failed, cancelled or rejected task ends the sequence with
	// the error Send would return instead of a Done event.
	Stream(ctx context.Context, req *CallRequest) iter.Seq2[StreamEvent, error]
	// Cancel asks the remote to cancel task taskID at agentURL. Cancelling
	// a finished task is not an error.
	Cancel(ctx context.Context, agentURL, taskID string) error
}

// TaskTransport is the optional task-oriented surface (the remote-task
// API's SupportsRemoteTasks), for remotes with long-running, resumable
// tasks. Check for it with a type assertion on a [Transport]. Errors are
// as for Transport; remotes without push notifications give
// [ErrUnsupported] from the push methods.
type TaskTransport interface {
	// SendTask creates a task (or continues the paused task
	// req.TaskID) and returns its snapshot: at once when blocking is
	// false, or once it is terminal or paused when true.
	SendTask(ctx context.Context, req *CallRequest, blocking bool) (*TaskSnapshot, error)
	// GetTask returns a task's snapshot with at most historyLength
	// history entries (0: no cap).
	GetTask(ctx context.Context, agentURL, taskID string, historyLength int) (*TaskSnapshot, error)
	// ListTasks returns a page of tasks matching req.
	ListTasks(ctx context.Context, req *ListTasksRequest) (*TaskPage, error)
	// SubscribeTask yields the task's events until it is terminal or
	// paused; the last event has Done set.
	SubscribeTask(ctx context.Context, req *SubscribeRequest) iter.Seq2[TaskEvent, error]
	// SetPushConfig stores push configuration configID of a task,
	// replacing one with the same ID. An empty configID lets the remote
	// choose one.
	SetPushConfig(ctx context.Context, agentURL, taskID, configID string, cfg PushConfig) (*PushBinding, error)
	// GetPushConfig returns one push configuration; ErrTaskNotFound
	// wrapped when the task or the configuration does not exist.
	GetPushConfig(ctx context.Context, agentURL, taskID, configID string) (*PushBinding, error)
	// ListPushConfigs returns a task's push configurations: at most
	// pageSize (0: the remote's default) after pageToken.
	ListPushConfigs(ctx context.Context, agentURL, taskID string, pageSize int, pageToken string) ([]PushBinding, error)
	// DeletePushConfig removes one push configuration.
	DeletePushConfig(ctx context.Context, agentURL, taskID, configID string) error
}

// RemoteTransport is the remote-task API's name of [Transport].
type RemoteTransport = Transport

// SupportsRemoteTasks is the remote-task API's name of [TaskTransport].
type SupportsRemoteTasks = TaskTransport

// Validate checks the request's fields and returns a
// [*sortie.ValidationError] naming the first bad one: agent_url (an
// absolute URL of at most 2,048 bytes), skill (required unless task_id is
// set, at most 256 bytes), message.id (at most [MaxMessageIDBytes] bytes),
// message.data (valid JSON), task_id and context_id (at most 256 bytes of
// UTF-8) and timeout (not negative).
func (r *CallRequest) Validate() error {
	if err := CheckAgentURL(r.AgentURL); err != nil {
		return err
	}
	if r.TaskID == "" && r.Skill == "" {
		return sortie.Invalidf("skill", "required unless task_id continues a task")
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"skill", r.Skill, 256}, {"message.id", r.Message.ID, MaxMessageIDBytes},
		{"task_id", r.TaskID, 256}, {"context_id", r.ContextID, 256},
	} {
		if len(f.v) > f.max || !utf8.ValidString(f.v) {
			return sortie.Invalidf(f.name, "must be valid UTF-8 of at most %d bytes, got %d", f.max, len(f.v))
		}
	}
	if len(r.Message.Data) > 0 && !json.Valid(r.Message.Data) {
		return sortie.Invalidf("message.data", "not valid JSON")
	}
	if r.Timeout < 0 {
		return sortie.Invalidf("timeout", "%v is negative", r.Timeout)
	}
	return nil
}

// CheckAgentURL returns a [*sortie.ValidationError] for field "agent_url"
// unless u is an absolute URL (with a scheme) of at most 2,048 bytes.
func CheckAgentURL(u string) error {
	if u == "" {
		return sortie.Invalidf("agent_url", "required")
	}
	if len(u) > 2048 {
		return sortie.Invalidf("agent_url", "%d bytes, limit 2048", len(u))
	}
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" {
		return sortie.Invalidf("agent_url", "%.80q is not an absolute URL", u)
	}
	return nil
}

// CheckTaskRef checks the agent URL and task ID that name a task, returning
// a [*sortie.ValidationError] for agent_url or task_id.
func CheckTaskRef(agentURL, taskID string) error {
	if err := CheckAgentURL(agentURL); err != nil {
		return err
	}
	if taskID == "" || len(taskID) > 256 || !utf8.ValidString(taskID) {
		return sortie.Invalidf("task_id", "must be 1-256 bytes of UTF-8, got %d", len(taskID))
	}
	return nil
}

// Validate checks the request's fields: agent_url, state (a known state
// or empty), page_size (0..1000), history_length (not negative) and
// context_id (at most 256 bytes); it returns a [*sortie.ValidationError].
func (r *ListTasksRequest) Validate() error {
	if err := CheckAgentURL(r.AgentURL); err != nil {
		return err
	}
	if r.State != "" {
		if _, err := ParseTaskState(string(r.State)); err != nil {
			return err
		}
	}
	if r.PageSize < 0 || r.PageSize > 1000 {
		return sortie.Invalidf("page_size", "%d outside 0..1000", r.PageSize)
	}
	if r.HistoryLength < 0 {
		return sortie.Invalidf("history_length", "%d is negative", r.HistoryLength)
	}
	if len(r.ContextID) > 256 {
		return sortie.Invalidf("context_id", "%d bytes, limit 256", len(r.ContextID))
	}
	return nil
}
