package host

import (
	"context"
	"os"
	"path/filepath"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/awssecrets"
	"github.com/sortie-run/sortie/functions/gcpsecrets"
)

// EnvConfigRefs is Config.ConfigRefs, absolute, in a worker subprocess's
// environment.
const EnvConfigRefs = "SORTIE_CONFIG_REFS"

// loadConfigRefs reads the ConfigRefs allowlist (nil without one).
func (c *Config) loadConfigRefs() (*functions.ConfigRefs, error) {
	if c.ConfigRefs == "" {
		return nil, nil
	}
	refs, err := functions.LoadConfigRefs(c.ConfigRefs)
	if err != nil {
		return nil, sortie.Invalidf("ConfigRefs", "%v", err)
	}
	return refs, nil
}

// checkConfigRefs loads the ConfigRefs allowlist and refuses trigger
// rules naming a reference it does not allow.
func (c *Config) checkConfigRefs() error {
	refs, err := c.loadConfigRefs()
	if err != nil {
		return err
	}
	if c.API != nil && c.API.TriggerRules != nil {
		if err := c.API.TriggerRules.CheckConfigRefs(refs); err != nil {
			return sortie.Invalidf("API.TriggerRules", "%v", err)
		}
	}
	return nil
}

// workerConfigRefs is the allowlist a local worker resolves through, with
// its secret stores.
func workerConfigRefs(cfg Config) (*functions.ConfigRefs, error) {
	refs, err := cfg.loadConfigRefs()
	if err != nil || refs == nil {
		return refs, err
	}
	refs.Secrets = cfg.ConfigRefSecrets
	if refs.Secrets == nil {
		refs.Secrets = defaultSecrets()
	}
	return refs, nil
}

// configRefsEnv is what a worker subprocess needs of the allowlist: its
// absolute path and the host's values of the variables its "env"
// references read.
func (c *Config) configRefsEnv() ([]string, error) {
	refs, err := c.loadConfigRefs()
	if err != nil || refs == nil {
		return nil, err
	}
	abs, err := filepath.Abs(c.ConfigRefs)
	if err != nil {
		return nil, sortie.Invalidf("ConfigRefs", "%q: %v", c.ConfigRefs, err)
	}
	env := []string{EnvConfigRefs + "=" + abs}
	for _, name := range refs.Names(functions.SourceEnv) {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env, nil
}

// defaultSecrets are Secrets Manager and Secret Manager sources with the
// process's default credentials, each client made on first use.
func defaultSecrets() map[string]functions.SecretSource {
	return map[string]functions.SecretSource{
		functions.SourceAWSSecret: functions.LazySecretSource(func(ctx context.Context) (functions.SecretSource, error) {
			cfg, err := config.LoadDefaultConfig(ctx)
			if err != nil {
				return nil, err
			}
			return awssecrets.New(secretsmanager.NewFromConfig(cfg)), nil
		}),
		functions.SourceGCPSecret: functions.LazySecretSource(func(ctx context.Context) (functions.SecretSource, error) {
			c, err := secretmanager.NewClient(ctx)
			if err != nil {
				return nil, err
			}
			return gcpsecrets.New(c), nil
		}),
	}
}
