package inputschema

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/jsonbody"
)

// maxCached bounds the compiled schemas a [Checker] keeps; past it the
// cache starts over (schemas come from the host's own manifests, so it
// is reached only by a host whose agent files change very often).
const maxCached = 256

// Checker compiles each distinct input schema once and checks variables
// against it; it implements [sortie.InputChecker]. The zero value is
// ready; it is safe for concurrent use.
type Checker struct {
	mu       sync.Mutex
	compiled map[[sha256.Size]byte]*jsonschema.Schema
}

var _ sortie.InputChecker = (*Checker)(nil)

// Check validates m ([sortie.Manifest.Validate]) and compiles its input
// schema, keeping it for [Checker.CheckInput]. A schema that does not
// compile is a [*sortie.ValidationError] naming "agent.input_schema".
// Hosts call it when they add or load a manifest.
func (c *Checker) Check(m *sortie.Manifest) error {
	_, err := c.load(m)
	return err
}

// load validates m and returns its compiled input schema (nil for none).
func (c *Checker) load(m *sortie.Manifest) (*jsonschema.Schema, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if len(m.InputSchema) == 0 {
		return nil, nil
	}
	return c.compile(m.InputSchema)
}

// CheckInput implements [sortie.InputChecker].
func (c *Checker) CheckInput(m *sortie.Manifest, variables json.RawMessage) error {
	if len(m.InputSchema) == 0 {
		return nil
	}
	sch := c.cached(m.InputSchema)
	if sch == nil {
		// A manifest seen first here (a catalog that never called
		// Check) is validated, size and shape included, then compiled.
		var err error
		if sch, err = c.load(m); err != nil {
			return err
		}
	}
	if len(variables) == 0 {
		variables = json.RawMessage("{}")
	}
	return jsonbody.Check(sch, variables, "variables")
}

// cached returns the compiled schema of doc, or nil when it was not
// compiled yet.
func (c *Checker) cached(doc json.RawMessage) *jsonschema.Schema {
	sum := sha256.Sum256(doc)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.compiled[sum]
}

// compile compiles doc unless it was compiled before, and keeps it.
func (c *Checker) compile(doc json.RawMessage) (*jsonschema.Schema, error) {
	if sch := c.cached(doc); sch != nil {
		return sch, nil
	}
	sum := sha256.Sum256(doc)
	sch, err := jsonbody.CompileSchema("agent.input_schema", "mem:///input-schema.json", doc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.compiled == nil || len(c.compiled) >= maxCached {
		c.compiled = map[[sha256.Size]byte]*jsonschema.Schema{}
	}
	c.compiled[sum] = sch
	return sch, nil
}

// Default is the process's checker: the hosts' engines and the CLI's
// manifest loader share it, so each schema is compiled once per process.
var Default = &Checker{}
