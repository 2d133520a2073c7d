package sortie_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/launchers/local"
)

var (
	gpt    = sortie.ModelProfile{Provider: "openai", Model: "gpt-5.6"}
	claude = sortie.ModelProfile{Provider: "anthropic", Model: "claude-x"}
)

func TestModelPolicyResolve(t *testing.T) {
	profiles := map[string]sortie.ModelProfile{"primary": gpt, "tuned": {Provider: "openai", Model: "gpt-5.6", Options: json.RawMessage(`{"temperature":0}`)}}
	strict := &sortie.ModelPolicy{RequireProfiles: true, AllowedModels: []string{"openai/gpt-5.6"}}
	for _, tc := range []struct {
		name   string
		policy *sortie.ModelPolicy
		ref    string
		want   string // the model's ID, or a word the refusal must hold
	}{
		{"profile allowed", strict, "primary", "openai/gpt-5.6"},
		{"bare model refused when profiles are required", strict, "openai/gpt-5.6", "require_profiles"},
		{"options refused", strict, "tuned", "allow_manifest_options"},
		{"options allowed", &sortie.ModelPolicy{AllowManifestOptions: true}, "tuned", "openai/gpt-5.6"},
		{"bare model outside the list", &sortie.ModelPolicy{AllowedModels: []string{"openai/*"}}, "anthropic/claude-x", "allowed_models"},
		{"bare model in a provider's wildcard", &sortie.ModelPolicy{AllowedModels: []string{"anthropic/*"}}, "anthropic/claude-x", "anthropic/claude-x"},
		{"no policy", nil, "tuned", "openai/gpt-5.6"},
	} {
		m, err := tc.policy.Resolve(profiles, tc.ref)
		switch {
		case strings.Contains(tc.want, "/") && (err != nil || m.ID() != tc.want):
			t.Errorf("%s: Resolve(%q) = %+v, %v; want %s", tc.name, tc.ref, m, err, tc.want)
		case !strings.Contains(tc.want, "/") && (!errors.Is(err, sortie.ErrRefused) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.ref)):
			t.Errorf("%s: Resolve(%q) = %v; want ErrRefused naming %q and %s", tc.name, tc.ref, err, tc.ref, tc.want)
		}
	}
}

func TestModelPolicyEnvRoundTrip(t *testing.T) {
	for _, p := range []*sortie.ModelPolicy{nil, {}, {RequireProfiles: true, AllowedModels: []string{"openai/gpt-5.6", "anthropic/*"}, AllowManifestOptions: true}} {
		env := map[string]string{}
		for _, kv := range p.Env() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		got, err := sortie.ModelPolicyFromEnv(func(k string) string { return env[k] })
		if err != nil || (p == nil) != (got == nil) || (p != nil && (got.RequireProfiles != p.RequireProfiles || got.AllowManifestOptions != p.AllowManifestOptions || strings.Join(got.AllowedModels, ",") != strings.Join(p.AllowedModels, ","))) {
			t.Errorf("ModelPolicyFromEnv(%v) = %+v, %v; want %+v", p.Env(), got, err, p)
		}
	}
	if _, err := sortie.ModelPolicyFromEnv(func(k string) string { return map[string]string{sortie.EnvAllowedModels: "gpt"}[k] }); err == nil {
		t.Error("ModelPolicyFromEnv(SORTIE_ALLOWED_MODELS=gpt) = nil error, want one naming the variable")
	}
}

// The engine checks the agent's and the request's profiles at submit:
// a refused one is a ValidationError naming its field, and nothing is
// stored; an allowed request profile replaces the agent's.
func TestSubmitChecksModelPolicy(t *testing.T) {
	cp := memory.New()
	defer cp.Close()
	l, err := local.New(&local.Options{InProcess: func(context.Context, *sortie.Invocation) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	agents := sortie.Agents{"modeled": {Name: "modeled", Runtime: "go:probe", Models: map[string]sortie.ModelProfile{"primary": claude}}}
	policy := &sortie.ModelPolicy{AllowedModels: []string{"openai/gpt-5.6"}}
	e := sortie.NewEngine(cp, l, agents, &sortie.EngineOptions{Models: policy})
	defer e.Close()
	ctx := t.Context()
	for field, req := range map[string]*sortie.SubmitRequest{
		"agent.models.primary.model": {Agent: "modeled"},
		"models.extra.model":         {Agent: "modeled", Models: map[string]sortie.ModelProfile{"primary": gpt, "extra": claude}},
	} {
		_, err := e.Submit(ctx, req)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != field || !strings.Contains(ve.Reason, "allowed_models") {
			t.Errorf("Submit(%+v) = %v, want a ValidationError for %s naming allowed_models", req.Models, err, field)
		}
	}
	if page, _ := cp.List(ctx, sortie.ListQuery{}); len(page.Runs) != 0 {
		t.Fatalf("refused submissions stored %d runs", len(page.Runs))
	}
	run, err := e.Submit(ctx, &sortie.SubmitRequest{Agent: "modeled", Models: map[string]sortie.ModelProfile{"primary": gpt}})
	if err != nil || run.Agent.Models["primary"].ID() != gpt.ID() {
		t.Fatalf("Submit replacing the profile = %+v, %v; want the run's primary to be %v", run, err, gpt)
	}
}
