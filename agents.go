package sortie

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// MaxInputSchemaBytes is the largest [Manifest.InputSchema], in bytes.
const MaxInputSchemaBytes = 64 << 10

// InputChecker checks a submission's variables against its agent's input
// schema ([Manifest.InputSchema]) at submit, before anything is stored.
// Package inputschema implements it with a JSON Schema validator; it
// stays behind this interface so that binaries which never load a
// schema (the Lambda bootstrap) do not link the validator.
type InputChecker interface {
	// CheckInput returns nil when m declares no input schema or variables
	// (a JSON object) satisfy it. Otherwise it returns a
	// [*ValidationError] naming the field of the first violation
	// ("variables.top", "variables.items[0]"; "variables" for the object
	// as a whole) and the schema's rule; or one naming
	// "agent.input_schema" when the schema does not compile.
	CheckInput(m *Manifest, variables json.RawMessage) error
}

// AgentLister is an optional [AgentCatalog] capability: the agents runs
// may name. [Agents] implements it.
type AgentLister interface {
	// ListAgents returns the catalog's manifests sorted by name.
	ListAgents(ctx context.Context) ([]Manifest, error)
}

// AgentDirectory is an optional [ExecutionEngine] capability: the agents
// a host runs, as `sortie agents` and `sortie describe` show them. The
// [*Engine] and the API's client (server/httpengine) implement it.
type AgentDirectory interface {
	// ListAgents returns the host's agents sorted by name, each as
	// [Manifest.Described] shows it. An engine whose catalog is not an
	// [AgentLister] returns an error wrapping errors.ErrUnsupported.
	ListAgents(ctx context.Context) ([]Manifest, error)
	// DescribeAgent returns the named agent as [Manifest.Described]
	// shows it: an error wrapping [ErrNotFound] when the host has no
	// such agent, a [*ValidationError] naming "agent" for a bad name.
	DescribeAgent(ctx context.Context, name string) (*Manifest, error)
}

var _ AgentDirectory = (*Engine)(nil)

// ListAgents implements [AgentLister].
func (a Agents) ListAgents(context.Context) ([]Manifest, error) {
	out := make([]Manifest, 0, len(a))
	for _, name := range slices.Sorted(maps.Keys(a)) {
		out = append(out, a[name])
	}
	return out, nil
}

// Described returns m as a host shows it: its policy is the one a run
// gets without overrides (m's, then def's, then the documented
// defaults), and InputSchema is a copy.
func (m Manifest) Described(def Policy) Manifest {
	m.Policy = m.Policy.Merge(def).WithDefaults()
	m.InputSchema = bytes.Clone(m.InputSchema)
	return m
}

// NewAgentDirectory returns the [AgentDirectory] of a catalog, without an
// engine: what an engine over agents with default policy def shows (the
// CLI's embedded `sortie agents` reads it so without opening the state).
// ListAgents needs agents to be an [AgentLister].
func NewAgentDirectory(agents AgentCatalog, def Policy) AgentDirectory {
	return catalogDirectory{agents: agents, def: def}
}

type catalogDirectory struct {
	agents AgentCatalog
	def    Policy
}

func (d catalogDirectory) ListAgents(ctx context.Context) ([]Manifest, error) {
	l, ok := d.agents.(AgentLister)
	if !ok {
		return nil, fmt.Errorf("list agents: the host's agent catalog cannot list its agents: %w", errors.ErrUnsupported)
	}
	agents, err := l.ListAgents(ctx)
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	for i := range agents {
		agents[i] = agents[i].Described(d.def)
	}
	return agents, nil
}

func (d catalogDirectory) DescribeAgent(ctx context.Context, name string) (*Manifest, error) {
	if err := CheckAgentName(name); err != nil {
		return nil, err
	}
	m, err := d.agents.Agent(ctx, name)
	if err != nil {
		return nil, err
	}
	m = m.Described(d.def)
	return &m, nil
}

// CheckAgentName returns a [*ValidationError] naming "agent" unless name
// is a valid agent name (1-63 characters of a-z, 0-9, '.', '_', '-',
// starting with a letter or digit).
func CheckAgentName(name string) error { return checkName("agent", name) }

// ListAgents implements [AgentDirectory].
func (e *Engine) ListAgents(ctx context.Context) ([]Manifest, error) {
	return NewAgentDirectory(e.agents, e.opts.DefaultPolicy).ListAgents(ctx)
}

// DescribeAgent implements [AgentDirectory].
func (e *Engine) DescribeAgent(ctx context.Context, name string) (*Manifest, error) {
	return NewAgentDirectory(e.agents, e.opts.DefaultPolicy).DescribeAgent(ctx, name)
}

// checkInputSchema checks the shape of a manifest's input schema: a JSON
// object of at most [MaxInputSchemaBytes]. Whether it is a valid JSON
// Schema is the [InputChecker]'s to say.
func checkInputSchema(b json.RawMessage) error {
	if len(b) == 0 {
		return nil
	}
	if len(b) > MaxInputSchemaBytes {
		return invalidf("agent.input_schema", "%d bytes, limit %d", len(b), MaxInputSchemaBytes)
	}
	if t := bytes.TrimSpace(b); !json.Valid(t) || len(t) == 0 || t[0] != '{' {
		return invalidf("agent.input_schema", "must be a JSON Schema object")
	}
	return nil
}

// checkInput checks the variables of a submission against m's input
// schema with the engine's [InputChecker]; without one, or without a
// schema, nothing is checked.
func (e *Engine) checkInput(m *Manifest, vars json.RawMessage) error {
	if e.opts.Inputs == nil || len(m.InputSchema) == 0 {
		return nil
	}
	return e.opts.Inputs.CheckInput(m, vars)
}
