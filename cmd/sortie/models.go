package main

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/host"
)

// modelFlags is the host's model policy, from flags or environment; the
// host hands the environment form to its worker subprocesses.
type modelFlags struct {
	allowed []string
	require bool
	options bool
}

func (m *modelFlags) register(f *pflag.FlagSet) {
	f.StringSliceVar(&m.allowed, "allowed-models", envList(sortie.EnvAllowedModels), "models runs may use, PROVIDER/MODEL or PROVIDER/*, comma-separated; a run naming another is refused at submit; any model when empty (env SORTIE_ALLOWED_MODELS)")
	f.BoolVar(&m.require, "require-model-profiles", os.Getenv(sortie.EnvRequireModelProfiles) == "1", "handlers may use only the model profiles their run names, never a bare PROVIDER/MODEL (env SORTIE_REQUIRE_MODEL_PROFILES=1)")
	f.BoolVar(&m.options, "allow-model-options", os.Getenv(sortie.EnvAllowModelOptions) == "1", "with a model policy, let model profiles set options (env SORTIE_ALLOW_MODEL_OPTIONS=1)")
}

// policy returns the model policy of the flags: nil (every model,
// options included) when none is set.
func (m *modelFlags) policy() (*sortie.ModelPolicy, error) {
	if len(m.allowed) == 0 && !m.require && !m.options && os.Getenv(sortie.EnvAllowModelOptions) == "" {
		return nil, nil
	}
	p := &sortie.ModelPolicy{AllowedModels: m.allowed, RequireProfiles: m.require, AllowManifestOptions: m.options}
	if err := p.Validate(); err != nil {
		return nil, usagef("--allowed-models: %v", err)
	}
	return p, nil
}

// authorizationFlags are the workers' authorization allowlists and
// webhook steps.
type authorizationFlags struct {
	tools       []string
	connections []string
	webhooks    bool
	secretFile  string
}

func (a *authorizationFlags) register(f *pflag.FlagSet) {
	f.StringSliceVar(&a.tools, "allow-tool", envList(functions.EnvAllowTools), "tools handlers may call (Call.AuthorizeTool), comma-separated; every tool call is refused when empty (env SORTIE_ALLOW_TOOLS)")
	f.BoolVar(&a.webhooks, "webhook-steps", os.Getenv(host.EnvWebhookSteps) == "1", "let handlers run webhook steps (Call.Webhook), through the destination policy; off by default (env SORTIE_WEBHOOK_STEPS=1)")
	f.StringVar(&a.secretFile, "webhook-step-secret-file", os.Getenv(host.EnvWebhookStepSecretFile), "file holding the secret (whsec_...) that signs webhook steps' requests; unsigned when empty (env SORTIE_WEBHOOK_STEP_SECRET_FILE)")
	f.StringSliceVar(&a.connections, "allow-connection", envList(functions.EnvAllowConnections), "connection references handlers may open (Call.Connect), comma-separated; every connection is refused when empty (env SORTIE_ALLOW_CONNECTIONS)")
}
