package functions

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Handler executes one attempt. It returns the output, marshalled to JSON as
// the run's result (at most [sortie.MaxResultBytes]), or an error: plain
// errors are retryable; see [Permanent], [Rejected] and [Interrupt]. A
// handler must return soon after ctx is done.
type Handler func(ctx context.Context, call *Call) (any, error)

// Registry maps the names of "go:NAME" runtimes to handlers. It is safe for
// concurrent use.
type Registry struct {
	mu       sync.RWMutex
	handlers map[string]Handler
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{handlers: make(map[string]Handler)}
}

// Register adds h as the handler of runtime "go:"+name. It panics when name
// is already registered or h is nil: registration happens at init and a
// duplicate is a programming error.
func (r *Registry) Register(name string, h Handler) {
	if h == nil {
		panic(fmt.Sprintf("functions: Register(%q) with a nil handler", name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.handlers[name]; dup {
		panic(fmt.Sprintf("functions: handler %q registered twice", name))
	}
	r.handlers[name] = h
}

// Names returns the names of the registered handlers, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.handlers))
}

// Lookup returns the handler registered as name.
func (r *Registry) Lookup(name string) (Handler, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.handlers[name]
	return h, ok
}
