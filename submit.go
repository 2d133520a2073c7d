package sortie

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/sortie-run/sortie/internal/strictjson"
)

// SubmitRequest asks for a new run of a named agent.
type SubmitRequest struct {
	// Agent names the agent in the engine's [AgentCatalog].
	Agent string `json:"agent"`
	// Variables is the run's input, a JSON object of at most
	// [MaxVariablesBytes]. Optional.
	Variables json.RawMessage `json:"variables,omitempty"`
	// ContextID groups runs (a conversation, a batch). Optional, ≤ 256 bytes.
	ContextID string `json:"context_id,omitempty"`
	// Labels are free-form key/value pairs; see [MaxLabels]. Optional.
	Labels map[string]string `json:"labels,omitempty"`
	// IdempotencyKey makes Submit return the existing run when the same key
	// was used before with the same request. Optional, ≤ 255 bytes.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Policy overrides the agent's policy field by field. Optional.
	Policy Policy `json:"policy,omitzero"`
	// ConfigRefs name configuration the worker's host resolves when each
	// attempt executes: opaque IDs of the host's allowlist
	// ([ConfigRefChecker]), each giving the handler one variable (as
	// inline configuration does) from the worker's environment, a
	// host-pinned file or a secret store. Only the IDs are stored and
	// sent, never a value. At most [MaxConfigRefs]; an ID the host does
	// not allow for the agent is refused at submit. Optional.
	ConfigRefs []string `json:"config_refs,omitempty"`
	// Config is the run's inline configuration, which may hold secrets: a
	// JSON object of string values; see [ParseConfig] for its limits. The
	// engine seals it before anything is stored (see [ConfigSealer]) and
	// only the worker opens it. It is not part of the request hash, so a
	// resubmission with the same idempotency key and other configuration
	// returns the existing run. Optional; refused when the engine's
	// Sealer is not a [ConfigSealer] (inline configuration off).
	Config json.RawMessage `json:"config,omitempty"`
	// Models replace the agent's model profiles of the same names
	// ([Manifest.Models]) for this run, or add profiles; the host's
	// [ModelPolicy] is checked at submit. Optional.
	Models map[string]ModelProfile `json:"models,omitempty"`
}

// Validate checks every field and limit and returns a [*ValidationError].
func (r *SubmitRequest) Validate() error {
	return r.validate(MaxVariablesBytes, "sortie.MaxVariablesBytes")
}

// ValidateText checks r's text fields as [SubmitRequest.Validate] does
// (context ID, idempotency key, labels: sizes, valid UTF-8, no control
// characters), without the variables' limit, which is the host's. A
// client checks them before it encodes r, since encoding/json replaces
// invalid UTF-8 with U+FFFD and the host would keep a value that is not
// the one given. It returns a [*ValidationError].
func (r *SubmitRequest) ValidateText() error {
	if len(r.ContextID) > 256 || !printable(r.ContextID) {
		return invalidf("context_id", "must be at most 256 bytes of UTF-8 without control characters, got %d bytes", len(r.ContextID))
	}
	if len(r.IdempotencyKey) > MaxIdempotencyKeyBytes || !printable(r.IdempotencyKey) {
		return invalidf("idempotency_key", "must be at most %d bytes of UTF-8 without control characters, got %d bytes", MaxIdempotencyKeyBytes, len(r.IdempotencyKey))
	}
	if len(r.Labels) > MaxLabels {
		return invalidf("labels", "%d labels, limit %d", len(r.Labels), MaxLabels)
	}
	for k, v := range r.Labels {
		if !labelKeyOK(k) || !labelValueOK(v) {
			return invalidf("labels", "label %.63q: keys must be 1-%d bytes and values at most %d bytes of UTF-8 without control characters", k, MaxLabelKeyBytes, MaxLabelValueBytes)
		}
	}
	return nil
}

// validate is Validate with maxVars the limit of the variables, in bytes,
// which what names.
func (r *SubmitRequest) validate(maxVars int, what string) error {
	if err := checkName("agent", r.Agent); err != nil {
		return err
	}
	if len(r.Variables) > maxVars {
		return invalidf("variables", "%d bytes, over the limit of %d bytes (%s)", len(r.Variables), maxVars, what)
	}
	if err := checkObject("variables", r.Variables, maxVars); err != nil {
		return err
	}
	if err := r.ValidateText(); err != nil {
		return err
	}
	if err := r.Policy.checkRequested(); err != nil {
		return err
	}
	if err := checkConfigRefs(r.ConfigRefs); err != nil {
		return err
	}
	if err := checkModelProfiles("models", r.Models); err != nil {
		return err
	}
	if hasConfig(r.Config) {
		_, err := ParseConfig(r.Config)
		return err
	}
	return nil
}

// hasConfig reports whether an inline configuration is present (neither
// empty nor JSON null).
func hasConfig(b json.RawMessage) bool {
	t := bytes.TrimSpace(b)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// Hash returns the request hash stored with an idempotency record: the
// SHA-256 (hex) of the request without its key, with variables in
// canonical form (object keys sorted), so equal requests hash equal. The
// inline configuration is left out: no digest of a secret is stored.
func (r *SubmitRequest) Hash() string {
	c := *r
	c.IdempotencyKey = ""
	c.Config = nil
	c.Variables = canonicalJSON(r.Variables)
	b, _ := json.Marshal(&c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func canonicalJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	var v any
	if strictjson.UnmarshalUseNumber(b, &v) != nil {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// AgentCatalog resolves agent names to manifests on the host.
type AgentCatalog interface {
	// Agent returns the manifest, or an error wrapping ErrNotFound.
	Agent(ctx context.Context, name string) (Manifest, error)
}

// Agents is an [AgentCatalog] held in memory, keyed by agent name.
type Agents map[string]Manifest

// Agent implements [AgentCatalog].
func (a Agents) Agent(_ context.Context, name string) (Manifest, error) {
	m, ok := a[name]
	if !ok {
		return Manifest{}, fmt.Errorf("agent %q: %w", name, ErrNotFound)
	}
	return m, nil
}

// Add validates m and adds it under its name.
func (a Agents) Add(m Manifest) error {
	if err := m.Validate(); err != nil {
		return err
	}
	a[m.Name] = m
	return nil
}

// checkModels lays the request's model profiles over the manifest's and
// checks them all against the host's model policy, naming the field the
// refused profile came from.
func (e *Engine) checkModels(m *Manifest, request map[string]ModelProfile) error {
	if err := e.opts.Models.CheckProfiles("models", request); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(m.Models)) {
		if _, replaced := request[name]; !replaced {
			if err := e.opts.Models.Check("agent.models."+name, m.Models[name]); err != nil {
				return err
			}
		}
	}
	m.Models = mergeModels(m.Models, request)
	return nil
}

// newRun builds the run a valid request asks for.
func (e *Engine) newRun(ctx context.Context, req *SubmitRequest) (*Run, error) {
	if err := req.validate(e.variablesLimit()); err != nil {
		return nil, err
	}
	m, err := e.agents.Agent(ctx, req.Agent)
	if errors.Is(err, ErrNotFound) {
		return nil, invalidf("agent", "no agent named %.80q on this host", req.Agent)
	} else if err != nil {
		return nil, fmt.Errorf("resolve agent %q: %w", req.Agent, err)
	}
	if err := e.checkRefsAllowed(m.Name, req.ConfigRefs); err != nil {
		return nil, err
	}
	if err := e.checkModels(&m, req.Models); err != nil {
		return nil, err
	}
	vars := req.Variables
	if len(bytes.TrimSpace(vars)) == 0 {
		vars = json.RawMessage("{}")
	}
	if err := e.checkInput(&m, vars); err != nil {
		return nil, err
	}
	m.InputSchema = nil // checked; never stored on the run
	run := &Run{
		ID:             NewRunID(e.now()),
		Agent:          m,
		ContextID:      req.ContextID,
		Labels:         req.Labels,
		Variables:      vars,
		ConfigRefs:     req.ConfigRefs,
		Policy:         req.Policy.Merge(m.Policy).Merge(e.opts.DefaultPolicy).WithDefaults(),
		IdempotencyKey: req.IdempotencyKey,
		RequestHash:    req.Hash(),
	}
	run.TraceParent, run.TraceState = TraceContextOf(ctx)
	if err := run.Policy.checkLiveness(); err != nil {
		return nil, err
	}
	if err := concurrencyOf(run); err != nil {
		return nil, err
	}
	if hasConfig(req.Config) {
		if err := e.sealConfig(ctx, run, req.Config); err != nil {
			return nil, err
		}
	}
	if err := e.offloadVariables(ctx, run); err != nil {
		return nil, err
	}
	if err := e.checkBudget(run); err != nil {
		e.dropPayloads(ctx, run)
		return nil, err
	}
	return run, nil
}
