package host

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/functions"
)

// The variables of Config.WebhookSteps and WebhookStepSecretFile a host
// passes its worker subprocesses.
const (
	// EnvWebhookSteps is "1" when Config.WebhookSteps is set.
	EnvWebhookSteps = "SORTIE_WEBHOOK_STEPS"
	// EnvWebhookStepSecretFile is Config.WebhookStepSecretFile, absolute.
	EnvWebhookStepSecretFile = "SORTIE_WEBHOOK_STEP_SECRET_FILE"
)

// webhookExecutor returns the local workers' webhook executor: nil
// unless WebhookSteps, signing with WebhookStepSecretFile's secret when
// it is set. Errors name the field and never show the secret.
func (c *Config) webhookExecutor() (*functions.WebhookExecutor, error) {
	if !c.WebhookSteps {
		return nil, nil
	}
	x := &functions.WebhookExecutor{}
	if c.WebhookStepSecretFile == "" {
		return x, nil
	}
	b, err := os.ReadFile(c.WebhookStepSecretFile)
	if err != nil {
		return nil, sortie.Invalidf("WebhookStepSecretFile", "%v", err)
	}
	if x.Signer, err = sign.NewSigner(strings.TrimSpace(string(b))); err != nil {
		return nil, sortie.Invalidf("WebhookStepSecretFile", "%s: %v", c.WebhookStepSecretFile, err)
	}
	return x, nil
}

// webhookEnv is the webhook steps' part of a worker subprocess's
// environment.
func (c *Config) webhookEnv() ([]string, error) {
	if !c.WebhookSteps {
		return nil, nil
	}
	env := []string{EnvWebhookSteps + "=1"}
	if c.WebhookStepSecretFile != "" {
		abs, err := filepath.Abs(c.WebhookStepSecretFile)
		if err != nil {
			return nil, sortie.Invalidf("WebhookStepSecretFile", "%v", err)
		}
		env = append(env, EnvWebhookStepSecretFile+"="+abs)
	}
	return env, nil
}
