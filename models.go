package sortie

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Limits of model profiles.
const (
	// MaxModelProfiles bounds the profiles of a manifest or a request.
	MaxModelProfiles = 32
	// MaxModelOptionsBytes bounds a profile's options (a JSON object).
	MaxModelOptionsBytes = 4 << 10
)

// ModelProfile is a named model an agent may use ([Manifest.Models]):
// which provider serves it, the provider's model name and, when the
// host's [ModelPolicy] allows them, options (a JSON object the agent
// passes on: temperature, reasoning effort, ...). It never holds a
// credential: the worker's environment or configuration does.
type ModelProfile struct {
	// Provider names the model's provider, e.g. "openai" or
	// "primary-openai": 1-64 characters of a-z, 0-9, '.', '_' or '-'.
	Provider string `json:"provider"`
	// Model is the provider's model name, 1-128 bytes without '/'
	// spaces or control characters, e.g. "gpt-5.6".
	Model string `json:"model"`
	// Options is a JSON object of at most [MaxModelOptionsBytes].
	// Optional.
	Options json.RawMessage `json:"options,omitempty"`
}

// ID returns the profile's model as the allowlist names it:
// "PROVIDER/MODEL".
func (p ModelProfile) ID() string { return p.Provider + "/" + p.Model }

func (p ModelProfile) validate(field string) error {
	if !namePattern.MatchString(p.Provider) {
		return invalidf(field+".provider", "%.64q must be 1-63 characters of a-z, 0-9, '.', '_' or '-'", p.Provider)
	}
	if p.Model == "" || len(p.Model) > 128 || strings.ContainsFunc(p.Model, func(r rune) bool { return r <= ' ' || r == '/' || r == 0x7f }) {
		return invalidf(field+".model", "%.128q must be 1-128 bytes without '/', spaces or control characters", p.Model)
	}
	return checkObject(field+".options", p.Options, MaxModelOptionsBytes)
}

// ParseModelID splits "PROVIDER/MODEL" into a profile without options,
// or returns a [*ValidationError] naming field.
func ParseModelID(field, id string) (ModelProfile, error) {
	provider, model, ok := strings.Cut(id, "/")
	p := ModelProfile{Provider: provider, Model: model}
	if !ok {
		return p, invalidf(field, "%.200q: want PROVIDER/MODEL", id)
	}
	return p, p.validate(field)
}

// checkModelProfiles checks a manifest's or a request's profiles; field
// is "agent.models" or "models".
func checkModelProfiles(field string, profiles map[string]ModelProfile) error {
	if len(profiles) > MaxModelProfiles {
		return invalidf(field, "%d profiles, limit %d", len(profiles), MaxModelProfiles)
	}
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		if err := checkName(field, name); err != nil {
			return err
		}
		if err := profiles[name].validate(field + "." + name); err != nil {
			return err
		}
	}
	return nil
}

// ModelPolicy is the host's rule for the models agents use (worker
// policy): the engine checks a run's profiles against it at submit
// ([EngineOptions.Models]), the worker again when an attempt starts and
// when a handler resolves a model (functions.Call.Model). A nil
// *ModelPolicy allows every model, options included; the zero policy
// allows any model but no manifest options.
type ModelPolicy struct {
	// RequireProfiles allows a handler only the profiles its run names:
	// resolving a bare "PROVIDER/MODEL" is refused. Optional; defaults
	// to false.
	RequireProfiles bool `json:"require_profiles,omitempty"`
	// AllowedModels lists the models runs may use, each
	// "PROVIDER/MODEL", or "PROVIDER/*" for every model of a provider.
	// Optional; empty allows any model.
	AllowedModels []string `json:"allowed_models,omitempty"`
	// AllowManifestOptions lets profiles carry options. Optional;
	// defaults to false: a profile with options is refused.
	AllowManifestOptions bool `json:"allow_manifest_options,omitempty"`
}

// Validate checks AllowedModels' entries, naming the field
// "allowed_models".
func (p *ModelPolicy) Validate() error {
	if p == nil {
		return nil
	}
	for _, id := range p.AllowedModels {
		m, err := ParseModelID("allowed_models", id)
		if err != nil && m.Model != "*" {
			return err
		}
	}
	return nil
}

// Check applies the policy to one profile, field naming it (for example
// "agent.models.primary"). A refusal is a [*ValidationError] on field's
// "model" or "options" that names the rule (allowed_models or
// allow_manifest_options).
func (p *ModelPolicy) Check(field string, m ModelProfile) error {
	if p == nil {
		return nil
	}
	if !p.allows(m) {
		return invalidf(field+".model", "%.200q is not in the host's allowed_models (%s)", m.ID(), strings.Join(p.AllowedModels, ", "))
	}
	if !p.AllowManifestOptions && hasConfig(m.Options) && !bytes.Equal(bytes.TrimSpace(m.Options), []byte("{}")) {
		return invalidf(field+".options", "the host's model policy does not allow profiles to set options (allow_manifest_options is false: sortie --allow-model-options, or SORTIE_ALLOW_MODEL_OPTIONS=1)")
	}
	return nil
}

func (p *ModelPolicy) allows(m ModelProfile) bool {
	if len(p.AllowedModels) == 0 {
		return true
	}
	return slices.Contains(p.AllowedModels, m.ID()) || slices.Contains(p.AllowedModels, m.Provider+"/*")
}

// CheckProfiles applies the policy to every profile of profiles, field
// naming the map ("agent.models", "models"), in name order.
func (p *ModelPolicy) CheckProfiles(field string, profiles map[string]ModelProfile) error {
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		if err := p.Check(field+"."+name, profiles[name]); err != nil {
			return err
		}
	}
	return nil
}

// Resolve returns the model ref names: the profile of profiles named
// ref, or, unless RequireProfiles, the bare model "PROVIDER/MODEL" ref
// is. Refusals wrap [ErrRefused] and name the profile and the rule
// (require_profiles, allowed_models, allow_manifest_options); a malformed
// bare model is a [*ValidationError].
func (p *ModelPolicy) Resolve(profiles map[string]ModelProfile, ref string) (ModelProfile, error) {
	m, ok := profiles[ref]
	if !ok {
		if p != nil && p.RequireProfiles {
			return ModelProfile{}, fmt.Errorf("model profile %.64q: the run names no such profile and the host's model policy requires profiles (require_profiles): %w", ref, ErrRefused)
		}
		bare, err := ParseModelID("model", ref)
		if err != nil {
			return ModelProfile{}, fmt.Errorf("model profile %.64q: the run names no such profile: %w", ref, err)
		}
		m = bare
	}
	if err := p.Check("models."+ref, m); err != nil {
		return ModelProfile{}, fmt.Errorf("model profile %.64q: %s: %w", ref, err.(*ValidationError).Reason, ErrRefused)
	}
	return m, nil
}

// The environment variables of a model policy, as workers read it and a
// host hands it to them.
const (
	// EnvAllowedModels is [ModelPolicy.AllowedModels], comma-separated.
	EnvAllowedModels = "SORTIE_ALLOWED_MODELS"
	// EnvRequireModelProfiles is "1" when RequireProfiles is set.
	EnvRequireModelProfiles = "SORTIE_REQUIRE_MODEL_PROFILES"
	// EnvAllowModelOptions is "1" when AllowManifestOptions is set.
	EnvAllowModelOptions = "SORTIE_ALLOW_MODEL_OPTIONS"
)

// ModelPolicyFromEnv returns the policy the variables [EnvAllowedModels],
// [EnvRequireModelProfiles] and [EnvAllowModelOptions] describe, as
// getenv returns them; nil (every model allowed) when none is set. A
// malformed variable is a [*ValidationError] naming it.
func ModelPolicyFromEnv(getenv func(string) string) (*ModelPolicy, error) {
	allowed, require, opts := getenv(EnvAllowedModels), getenv(EnvRequireModelProfiles), getenv(EnvAllowModelOptions)
	if allowed == "" && require == "" && opts == "" {
		return nil, nil
	}
	p := &ModelPolicy{RequireProfiles: require == "1", AllowManifestOptions: opts == "1"}
	for item := range strings.SplitSeq(allowed, ",") {
		if item = strings.TrimSpace(item); item != "" {
			p.AllowedModels = append(p.AllowedModels, item)
		}
	}
	for name, v := range map[string]string{EnvRequireModelProfiles: require, EnvAllowModelOptions: opts} {
		if v != "" && v != "0" && v != "1" {
			return nil, invalidf(name, "%.20q: want 1 or 0", v)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, invalidf(EnvAllowedModels, "%v", err)
	}
	return p, nil
}

// Env returns p as the variables [ModelPolicyFromEnv] reads (none for a
// nil policy).
func (p *ModelPolicy) Env() []string {
	if p == nil {
		return nil
	}
	out := []string{EnvAllowedModels + "=" + strings.Join(p.AllowedModels, ",")}
	out = append(out, EnvRequireModelProfiles+"="+boolEnv(p.RequireProfiles), EnvAllowModelOptions+"="+boolEnv(p.AllowManifestOptions))
	return out
}

func boolEnv(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// mergeModels returns the manifest's profiles with the request's laid
// over them (a request's profile replaces the manifest's of that name).
func mergeModels(manifest, request map[string]ModelProfile) map[string]ModelProfile {
	if len(request) == 0 {
		return manifest
	}
	out := maps.Clone(manifest)
	if out == nil {
		out = map[string]ModelProfile{}
	}
	maps.Copy(out, request)
	return out
}
