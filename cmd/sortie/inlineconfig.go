package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
	"github.com/sortie-run/sortie/functions"
)

// Inline configuration on the embedded host: off unless --config-env (or
// SORTIE_CONFIG_ENV) names the environment allowlist. Then the engine seals
// configuration with the local key in the state directory (localKeyFile,
// created with mode 0600 on first use) and the worker opens it with the
// same file.
const (
	localKeyFile = "local.key"
	localKeyID   = "local"
)

var configNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// envNames splits a comma-separated list of variable names.
func envNames(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (g *globals) validateConfigEnv() error {
	for _, name := range g.configEnv {
		if !configNamePattern.MatchString(name) {
			return usagef("--config-env %q: variable names are 1-128 characters of A-Z, a-z, 0-9 and '_', not starting with a digit", name)
		}
	}
	return nil
}

// configEnvVars passes the allowlist on to worker subprocesses.
func (g *globals) configEnvVars() []string {
	if len(g.configEnv) == 0 {
		return nil
	}
	return []string{"SORTIE_CONFIG_ENV=" + strings.Join(g.configEnv, ",")}
}

// sealer returns the engine's Sealer: none (inline configuration off)
// without --config-env, else the local key of the state directory dir,
// created on first use, with the data-key cache.
func (g *globals) sealer(dir string) (sortie.Sealer, error) {
	if len(g.configEnv) == 0 {
		return nil, nil
	}
	kek, _, err := localkey.LoadOrCreate(filepath.Join(dir, localKeyFile))
	if err != nil {
		return nil, fmt.Errorf("inline configuration: %w", err)
	}
	return keeperConfig(kek)
}

// inlineConfig turns on inline configuration for w with --config-env: the
// worker opens with the state directory's local key, which the host made.
func (g *globals) inlineConfig(w *functions.Worker) error {
	if len(g.configEnv) == 0 {
		return nil
	}
	dir, err := g.absStateDir()
	if err != nil {
		return err
	}
	kek, err := localkey.Load(filepath.Join(dir, localKeyFile))
	if err != nil {
		return fmt.Errorf("inline configuration: %w", err)
	}
	cfg, err := keeperConfig(kek)
	if err != nil {
		return err
	}
	w.InlineConfig = &functions.InlineConfig{Opener: cfg, Allow: g.configEnv}
	return nil
}

func keeperConfig(kek envelope.KEK) (*envelope.Config, error) {
	ring, err := envelope.NewKeyring(localKeyID, kek)
	if err != nil {
		return nil, fmt.Errorf("inline configuration: %w", err)
	}
	return envelope.NewConfig(envelope.New(ring, &envelope.Options{Cache: &envelope.CacheOptions{}})), nil
}

// configEnvDefault is the --config-env default, from SORTIE_CONFIG_ENV.
func configEnvDefault() []string { return envNames(os.Getenv("SORTIE_CONFIG_ENV")) }
