package remote

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// binder records the remote task a call is bound to, and keeps the call's
// binding record in the node's store while the task may run.
type binder struct {
	c     *call
	ctx   context.Context
	abort context.CancelCauseFunc

	mu        sync.Mutex
	taskID    string
	contextID string
	saved     string // the task ID of the record stored
	done      bool
}

func (b *binder) init(c *call, ctx context.Context, abort context.CancelCauseFunc) {
	b.c, b.ctx, b.abort = c, ctx, abort
}

// bind notes the task x names and, the first time a task is known, stores
// the call's binding record; a record that cannot be stored aborts the
// call (which then cancels the task), so no task runs unrecorded.
func (b *binder) bind(x Binding) {
	b.mu.Lock()
	if x.TaskID != "" {
		b.taskID = x.TaskID
	}
	if x.ContextID != "" {
		b.contextID = x.ContextID
	}
	rec := b.record()
	b.mu.Unlock()
	if rec == nil {
		return
	}
	if err := b.c.n.Bindings.PutBinding(b.ctx, rec); err != nil {
		b.abort(fmt.Errorf("remote: record task %s under key %.80q: %w: %w", rec.TaskID, rec.Key, errBindingNotSaved, err))
		return
	}
	b.mu.Lock()
	b.saved = rec.TaskID
	b.mu.Unlock()
}

// record is the binding record to store, or nil when there is none to
// store (no key, no task yet, or already stored). b.mu is held.
func (b *binder) record() *BindingRecord {
	if b.c == nil || b.c.key == "" || b.taskID == "" || b.taskID == b.saved || b.c.resumed {
		return nil
	}
	now := time.Now().UnixMilli()
	r := b.c.req
	return &BindingRecord{Node: b.c.n.Name, Key: b.c.key, AgentURL: r.AgentURL, TaskID: b.taskID,
		ContextID: b.contextID, Skill: r.Skill, MessageID: r.Message.ID, CreatedMs: now, UpdatedMs: now}
}

// finish notes the task x names as ended.
func (b *binder) finish(x Binding) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if x.TaskID != "" {
		b.taskID = x.TaskID
	}
	if x.ContextID != "" {
		b.contextID = x.ContextID
	}
	b.done = true
}

// remove deletes the call's binding record, if it has one.
func (b *binder) remove(ctx context.Context) error {
	b.mu.Lock()
	taskID := b.taskID
	b.mu.Unlock()
	if b.c == nil || b.c.key == "" || taskID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := b.c.n.Bindings.DeleteBinding(ctx, b.c.n.Name, b.c.key, taskID); err != nil {
		return fmt.Errorf("remote: remove the binding of key %.80q: %w", b.c.key, err)
	}
	return nil
}

// resumed sets the task a resumed call waits for (its record is stored).
func (b *binder) resumed(rec *BindingRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.taskID, b.contextID, b.saved = rec.TaskID, rec.ContextID, rec.TaskID
}

func (b *binder) task() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.taskID, b.done
}

func (b *binder) ids() (string, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.taskID, b.contextID
}
