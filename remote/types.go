package remote

import (
	"encoding/json"
	"time"
)

// Role says who sent a [Message].
type Role string

// The message roles.
const (
	RoleUser  Role = "user"
	RoleAgent Role = "agent"
)

// Message is what a call forwards to a remote agent, and an entry of a
// task's history. Text and Data may both be set.
type Message struct {
	// ID identifies the message; transports use it as the remote idempotency
	// key, so a retried call with the same ID starts no second task.
	// Optional; a transport generates a random one when empty. At most
	// [MaxMessageIDBytes] bytes.
	ID string `json:"id,omitempty"`
	// Role is who sent it. Optional; a call's message is from the user.
	Role Role `json:"role,omitempty"`
	// Text is the message's text. Optional.
	Text string `json:"text,omitempty"`
	// Data is a JSON value sent with it; a Sortie agent takes a JSON
	// object (its run variables). Optional.
	Data json.RawMessage `json:"data,omitempty"`
}

// MaxMessageIDBytes is the longest [Message.ID]: the longest idempotency
// key a Sortie host takes.
const MaxMessageIDBytes = 255

// CallRequest is the input of [Transport.Send], [Transport.Stream] and
// [TaskTransport.SendTask].
type CallRequest struct {
	// Message is forwarded to the remote agent.
	Message Message
	// Skill names the remote skill to invoke (on a Sortie host: the
	// agent). Required unless TaskID is set.
	Skill string
	// AgentURL is the base URL of the remote agent. Required.
	AgentURL string
	// AgentCard is the target's agent card (JSON), when the caller already
	// has it; transports that need a card fetch it otherwise. Optional.
	AgentCard json.RawMessage
	// Metadata is sent alongside the message where the transport has a
	// place for it. Optional.
	Metadata map[string]any
	// Timeout bounds the call. Optional; 0 means only ctx bounds it.
	Timeout time.Duration
	// ContextID continues a remote context (a conversation). Optional.
	ContextID string
	// TaskID continues a paused remote task (input-required or
	// auth-required) with Message. Optional.
	TaskID string
	// Bind, when set, is called by the transport as soon as it knows the
	// remote task, before the call returns (for example after the remote
	// accepted the message, while the call still waits for the result).
	// [Node] uses it to mirror cancellation. Optional.
	Bind func(Binding)
}

// Binding names the remote task a call created or continued.
type Binding struct {
	AgentURL  string
	TaskID    string
	ContextID string
}

// CallResult is what [Transport.Send] returns.
type CallResult struct {
	// Result is the remote agent's result, as JSON.
	Result json.RawMessage
	// ContextID and TaskID name the remote context and task, when the
	// remote has them.
	ContextID string
	TaskID    string
	// AgentURL is the agent that served the call.
	AgentURL string
	// Meta is additional transport metadata. Optional.
	Meta map[string]any
}

// StreamEvent is one item of [Transport.Stream]. The last one has Done set
// and, when the task completed, its Result.
type StreamEvent struct {
	// Text is an incremental text chunk, if any.
	Text string
	// Done marks the last event of the stream.
	Done bool
	// Result is the task's result, on the Done event.
	Result json.RawMessage
	// Meta is metadata of the chunk (for example the event kind and data).
	Meta map[string]any
	// ContextID, TaskID and AgentURL name the remote task, when known.
	ContextID string
	TaskID    string
	AgentURL  string
	// Cursor is the position just after this event, for
	// [SubscribeRequest.After]; empty when the transport has no cursors.
	Cursor string
}

// TaskStatus is a remote task's current status.
type TaskStatus struct {
	State TaskState
	// Message is a human-readable status message (an interrupt's prompt, a
	// failure's reason). Optional.
	Message string
	// TimeMs is when the status was reported, Unix ms; 0 when unknown.
	TimeMs int64
	// Raw is the transport's status payload, for debugging. Optional.
	Raw json.RawMessage
}

// Artifact is an output of a task. Text and Data may both be set.
type Artifact struct {
	ID   string
	Name string
	Text string
	Data json.RawMessage
}

// TaskSnapshot is a remote task as a task-oriented transport reports it.
type TaskSnapshot struct {
	TaskID    string
	ContextID string
	Status    TaskStatus
	// Result is the task's result once it completed.
	Result    json.RawMessage
	Artifacts []Artifact
	// History holds the messages exchanged, oldest first, as far as the
	// remote keeps them.
	History  []Message
	AgentURL string
	Meta     map[string]any
}

// Terminal reports whether the task's state is terminal.
func (t *TaskSnapshot) Terminal() bool { return t.Status.State.Terminal() }

// The kinds of [TaskEvent].
const (
	// KindTask: the event carries a full snapshot in Task.
	KindTask = "task"
	// KindStatus: the event carries a status change in Status (progress
	// reports are working statuses with Text).
	KindStatus = "status"
	// KindArtifact: the event carries an output in Artifact.
	KindArtifact = "artifact"
	// KindMessage: the remote answered with a message, in Text and Result.
	KindMessage = "message"
)

// TaskEvent is one item of [TaskTransport.SubscribeTask].
type TaskEvent struct {
	// Kind is one of [KindTask], [KindStatus], [KindArtifact] or
	// [KindMessage].
	Kind     string
	Task     *TaskSnapshot
	Status   *TaskStatus
	Text     string
	Result   json.RawMessage
	Artifact *Artifact
	// Done marks the last event of the subscription.
	Done      bool
	ContextID string
	TaskID    string
	AgentURL  string
	// Cursor is the position just after this event: pass it as
	// [SubscribeRequest.After] to resume after a disconnect. Empty when
	// the event has no position (snapshots, final statuses).
	Cursor string
	Meta   map[string]any
	// Raw is the transport's event payload, for debugging. Optional.
	Raw json.RawMessage
}

// DefaultPageSize is the page size of [ListTasksRequest] when none is given.
const DefaultPageSize = 100

// ListTasksRequest filters and pages [TaskTransport.ListTasks].
type ListTasksRequest struct {
	// AgentURL is the remote agent to ask. Required.
	AgentURL string
	// ContextID keeps only tasks of this context. Optional.
	ContextID string
	// State keeps only tasks in this state. Optional.
	State TaskState
	// PageSize is the most tasks returned. Optional; defaults to
	// [DefaultPageSize]. Remotes cap it (an A2A agent at 100).
	PageSize int
	// PageToken continues a previous page. Optional.
	PageToken string
	// HistoryLength caps each task's history. Optional; 0 means no cap.
	HistoryLength int
	// IncludeArtifacts asks for each task's artifacts.
	IncludeArtifacts bool
}

// TaskPage is one page of [TaskTransport.ListTasks].
type TaskPage struct {
	Tasks []TaskSnapshot
	// NextPageToken fetches the next page; empty on the last one.
	NextPageToken string
	// PageSize is the page size that was asked for.
	PageSize int
	// TotalSize is how many tasks match across all pages, when the
	// transport reports it; 0 otherwise.
	TotalSize int
}

// SubscribeRequest names the task of [TaskTransport.SubscribeTask].
type SubscribeRequest struct {
	AgentURL string
	TaskID   string
	// After resumes the subscription after this cursor (a
	// [TaskEvent.Cursor] or [StreamEvent.Cursor] seen before): every event
	// after it is delivered, none twice. Optional; without it the
	// subscription starts with the task's current snapshot and live
	// updates.
	After string
}

// PushConfig is where a remote sends a task's push notifications. Which
// fields a remote accepts is transport-specific (a Sortie host signs every
// delivery with its own key and refuses Token and Auth).
type PushConfig struct {
	// URL receives the notifications. Required.
	URL string
	// Token is sent back with each notification so the receiver can
	// validate it. Optional.
	Token string
	// Auth is how the remote authenticates to URL. Optional.
	Auth *PushAuth
	// KeyID names the remote's signing key (Sortie). Optional.
	KeyID string
}

// PushAuth is how a remote authenticates its notifications. Credentials
// is a secret.
type PushAuth struct {
	Scheme      string
	Credentials string
}

// PushBinding is a push configuration as a remote stores it.
type PushBinding struct {
	// ID names the configuration within the task.
	ID     string
	TaskID string
	Config PushConfig
}
