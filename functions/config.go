package functions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sortie-run/sortie"
)

// InlineConfig turns on inline configuration for a [Worker]: the sealed
// [sortie.Invocation.SealedConfig] that the engine made from a
// submission's [sortie.SubmitRequest.Config].
type InlineConfig struct {
	// Opener opens an invocation's sealed configuration; the envelope
	// package's Config is one. Required.
	Opener Opener
	// Allow is the environment allowlist: the names of the variables an
	// inline configuration may set. It is the complete set of variables a
	// handler sees through [Call.Config], and the complete set an exec
	// command gets from the configuration (in its environment, besides
	// [ExecSpec.Env]). An attempt whose configuration sets any other name
	// is rejected, naming it. Required: an empty list refuses every
	// configuration.
	Allow []string
}

// ParseAllow reads an allowlist ([InlineConfig.Allow]) as workers'
// environments hold it (SORTIE_CONFIG_ENV): comma-separated names, spaces
// and blank items ignored; nil for none.
func ParseAllow(v string) []string {
	var out []string
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// Opener opens an invocation's sealed inline configuration inside the
// worker.
type Opener interface {
	// Open returns the plaintext configuration of inv.SealedConfig, which
	// must be bound to inv's run and attempt, and how many key-management
	// requests it made (0 when a cached data key served). Errors wrap
	// sortie.ErrUnavailable when a retry may cure them, and never contain
	// the configuration.
	Open(ctx context.Context, inv *sortie.Invocation) (config []byte, kmsRequests int, err error)
}

// errTypeConfig is an inline configuration that could not be opened.
const errTypeConfig = "config"

// openConfig opens the attempt's inline configuration, if it has one, and
// applies the allowlist. A refusal is returned as the attempt's outcome:
// rejected when inline configuration is off or the configuration breaks
// the allowlist, error type "config" when it cannot be opened (retryable
// when the error wraps sortie.ErrUnavailable).
func (w *Worker) openConfig(ctx context.Context, inv *sortie.Invocation) (cfg map[string]string, kmsRequests int, refused *sortie.Outcome) {
	if len(inv.SealedConfig) == 0 {
		return nil, 0, nil
	}
	ic := w.InlineConfig
	if ic == nil || ic.Opener == nil {
		o := errorOutcome(sortie.ErrorTypeRejected, "the invocation carries inline configuration, which is off on this worker host", false)
		return nil, 0, &o
	}
	pt, n, err := ic.Opener.Open(ctx, inv)
	defer clear(pt)
	if err != nil {
		o := errorOutcome(errTypeConfig, "open the inline configuration: "+err.Error(), errors.Is(err, sortie.ErrUnavailable))
		return nil, n, &o
	}
	cfg, err = sortie.ParseConfig(pt)
	if err != nil {
		o := errorOutcome(sortie.ErrorTypeRejected, err.Error(), false)
		return nil, n, &o
	}
	if denied := ic.denied(cfg); len(denied) > 0 {
		o := errorOutcome(sortie.ErrorTypeRejected, fmt.Sprintf(
			"inline configuration sets %s, not in this worker's environment allowlist (%s)",
			strings.Join(denied, ", "), strings.Join(slices.Sorted(slices.Values(ic.Allow)), ", ")), false)
		clear(cfg)
		return nil, n, &o
	}
	return cfg, n, nil
}

// denied returns the sorted names of cfg that the allowlist lacks.
func (ic *InlineConfig) denied(cfg map[string]string) []string {
	var out []string
	for k := range cfg {
		if !slices.Contains(ic.Allow, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// withConfig returns env with the configuration's variables added, each
// replacing an entry of the same name.
func withConfig(env []string, cfg map[string]string) []string {
	if len(cfg) == 0 {
		return env
	}
	out := make([]string, 0, len(env)+len(cfg))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := cfg[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		out = append(out, k+"="+cfg[k])
	}
	return out
}
