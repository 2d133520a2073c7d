package sortie

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/sortie-run/sortie/internal/strictjson"
)

// Limits of an inline configuration ([SubmitRequest.Config]).
const (
	// MaxConfigBytes is the largest inline configuration, in bytes.
	MaxConfigBytes = 32 << 10
	// MaxConfigEntries is the most variables it may set.
	MaxConfigEntries = 64
	// MinConfigValueBytes is the shortest value a variable may have: the
	// worker masks every configuration value an agent echoes (in events,
	// results, errors, prompts and logs), and a shorter one cannot be
	// masked without masking ordinary text.
	MinConfigValueBytes = 8
)

// configNamePattern is what an inline configuration variable is named:
// an environment variable name.
var configNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// ConfigSealer is an optional capability of a [Sealer]: keeping a run's
// inline configuration sealed at rest. With it the engine accepts
// [SubmitRequest.Config]: it seals the configuration before the run is
// reserved and stores only the result, [Run.SealedConfig]; each launch
// copies that into [Invocation.SealedConfig] and [Sealer.Seal] re-seals it
// for the attempt. Without it a submission carrying configuration is
// refused: inline configuration is off.
type ConfigSealer interface {
	// SealConfig seals config bound to run (its ID and agent) and returns
	// the sealed form: JSON of at most 64 KiB that holds no plaintext.
	// Its errors must not contain the configuration.
	SealConfig(ctx context.Context, run *Run, config json.RawMessage) (json.RawMessage, error)
}

// ParseConfig decodes an inline configuration: a JSON object of at most
// [MaxConfigBytes] whose at most [MaxConfigEntries] keys are environment
// variable names (1-128 characters of A-Z, a-z, 0-9 and '_', not starting
// with a digit), each given once, and whose values are strings of at least
// [MinConfigValueBytes] bytes without NUL bytes. Errors are
// [*ValidationError]s for field "config" that name a key but never show a
// value.
func ParseConfig(b []byte) (map[string]string, error) {
	if len(b) > MaxConfigBytes {
		return nil, invalidf("config", "%d bytes, limit %d", len(b), MaxConfigBytes)
	}
	var raw map[string]json.RawMessage
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &raw) != nil {
		return nil, invalidf("config", "must be a JSON object of string values")
	}
	if _, err := strictjson.Scan(b); err != nil {
		return nil, invalidf("config", "%v", err)
	}
	if len(raw) > MaxConfigEntries {
		return nil, invalidf("config", "%d variables, limit %d", len(raw), MaxConfigEntries)
	}
	cfg := make(map[string]string, len(raw))
	for k, v := range raw {
		if !configNamePattern.MatchString(k) {
			return nil, invalidf("config", "variable name %.64q must be 1-128 characters of A-Z, a-z, 0-9 and '_', not starting with a digit", k)
		}
		var s string
		if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '"' || json.Unmarshal(t, &s) != nil {
			return nil, invalidf("config", "the value of %s must be a JSON string", k)
		}
		if strings.ContainsRune(s, 0) {
			return nil, invalidf("config", "the value of %s must not hold NUL bytes", k)
		}
		if len(s) < MinConfigValueBytes {
			return nil, invalidf("config", "the value of %s is %d bytes, under %d: too short to mask safely where an agent echoes it", k, len(s), MinConfigValueBytes)
		}
		cfg[k] = s
	}
	return cfg, nil
}

// sealConfig seals a request's configuration onto run through the engine's
// [ConfigSealer]; without one, inline configuration is off and the
// request is refused.
func (e *Engine) sealConfig(ctx context.Context, run *Run, config json.RawMessage) error {
	cs, ok := e.opts.Sealer.(ConfigSealer)
	if !ok {
		return invalidf("config", "inline configuration is off on this host (its engine has no ConfigSealer)")
	}
	sealed, err := cs.SealConfig(ctx, run, config)
	if err != nil {
		return fmt.Errorf("submit: seal the configuration of run %s: %w", run.ID, err)
	}
	if err := checkJSON("sealed_config", sealed, 64<<10); err != nil {
		return fmt.Errorf("submit: the sealer returned an unusable sealed configuration: %w", err)
	}
	run.SealedConfig = sealed
	return nil
}
