package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sortie-run/sortie"
)

// ErrBindingNotFound: no binding is stored under the node and key.
var ErrBindingNotFound = errors.New("remote binding not found")

// BindingRecord is the remote task a keyed call of a [Node] started, as a
// [BindingStore] keeps it: enough to find the task again after the caller
// restarted, and nothing of the message itself (no variables, no
// metadata).
type BindingRecord struct {
	// Node is the node's name and Key the call's [CallOptions.Key]; the
	// pair identifies the record. Each is 1-256 bytes of UTF-8.
	Node string `json:"node"`
	Key  string `json:"key"`
	// AgentURL, TaskID and ContextID name the remote task.
	AgentURL  string `json:"agent_url"`
	TaskID    string `json:"task_id"`
	ContextID string `json:"context_id,omitempty"`
	// Skill is the remote skill called.
	Skill string `json:"skill,omitempty"`
	// MessageID is the ID of the message that started the task (the
	// remote's idempotency key).
	MessageID string `json:"message_id,omitempty"`
	// CreatedMs and UpdatedMs are when the record was first and last
	// stored, Unix ms.
	CreatedMs int64 `json:"created_ms"`
	UpdatedMs int64 `json:"updated_ms"`
}

// Validate returns a [*sortie.ValidationError] naming the first bad field:
// node, key and task_id (1-256 bytes of UTF-8) and agent_url.
func (r *BindingRecord) Validate() error {
	if err := CheckBindingKey(r.Node, r.Key); err != nil {
		return err
	}
	return CheckTaskRef(r.AgentURL, r.TaskID)
}

// CheckBindingKey checks a record's identity: node and key, each 1-256
// bytes of UTF-8. It returns a [*sortie.ValidationError] for field "node"
// or "key".
func CheckBindingKey(node, key string) error {
	for _, f := range []struct{ name, v string }{{"node", node}, {"key", key}} {
		if f.v == "" || len(f.v) > 256 || !utf8.ValidString(f.v) {
			return sortie.Invalidf(f.name, "must be 1-256 bytes of UTF-8, got %d", len(f.v))
		}
	}
	return nil
}

// BindingStore keeps [BindingRecord]s, so a caller that restarted can find
// the remote tasks it started and resume or cancel them ([Node.Resume],
// [Node.CancelBound]). Implementations are safe for concurrent use;
// remote/bindingtest is their conformance suite. Methods return a
// [*sortie.ValidationError] for a bad node, key or record, and pass ctx
// errors through.
type BindingStore interface {
	// PutBinding stores rec under (rec.Node, rec.Key), replacing the record
	// there but keeping its CreatedMs.
	PutBinding(ctx context.Context, rec *BindingRecord) error
	// GetBinding returns the record under (node, key). It MUST return an
	// error wrapping [ErrBindingNotFound] when there is none.
	GetBinding(ctx context.Context, node, key string) (*BindingRecord, error)
	// DeleteBinding removes the record under (node, key) when it still
	// names task taskID (any task when taskID is empty), so a call that
	// ended does not remove the record of a newer call with the same key.
	// Deleting a missing record is not an error.
	DeleteBinding(ctx context.Context, node, key, taskID string) error
	// ListBindings returns the records of node (of every node when node is
	// empty), ordered by node, then key.
	ListBindings(ctx context.Context, node string) ([]BindingRecord, error)
}

// MemoryBindings is a [BindingStore] in memory: it does not survive the
// process, so it serves tests and callers that only need
// [Node.CancelBound] within one process. The zero value is ready to use.
type MemoryBindings struct {
	mu   sync.Mutex
	recs map[[2]string]BindingRecord
}

var _ BindingStore = (*MemoryBindings)(nil)

// PutBinding implements [BindingStore].
func (m *MemoryBindings) PutBinding(ctx context.Context, rec *BindingRecord) error {
	if err := rec.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs = map[[2]string]BindingRecord{}
	}
	k := [2]string{rec.Node, rec.Key}
	c := *rec
	if prev, ok := m.recs[k]; ok {
		c.CreatedMs = prev.CreatedMs
	}
	m.recs[k] = c
	return ctx.Err()
}

// GetBinding implements [BindingStore].
func (m *MemoryBindings) GetBinding(ctx context.Context, node, key string) (*BindingRecord, error) {
	if err := CheckBindingKey(node, key); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs[[2]string{node, key}]
	if !ok {
		return nil, NotBound(node, key)
	}
	return &rec, ctx.Err()
}

// DeleteBinding implements [BindingStore].
func (m *MemoryBindings) DeleteBinding(ctx context.Context, node, key, taskID string) error {
	if err := CheckBindingKey(node, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{node, key}
	if rec, ok := m.recs[k]; ok && (taskID == "" || rec.TaskID == taskID) {
		delete(m.recs, k)
	}
	return ctx.Err()
}

// ListBindings implements [BindingStore].
func (m *MemoryBindings) ListBindings(ctx context.Context, node string) ([]BindingRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []BindingRecord
	for _, rec := range m.recs {
		if node == "" || rec.Node == node {
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b BindingRecord) int {
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out, ctx.Err()
}

// NotBound returns the error a [BindingStore] gives for a missing record:
// it names the node and key and wraps [ErrBindingNotFound].
func NotBound(node, key string) error {
	return fmt.Errorf("node %.80q key %.80q: %w", node, key, ErrBindingNotFound)
}
