package envelope

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sortie-run/sortie"
)

// Purposes of the envelopes of an invocation's inline configuration. They
// go into the key-management context, so a key policy can let workers
// open only PurposeInvocation.
const (
	// PurposeAtRest is the run's copy kept by the control plane between
	// attempts (attempt 0 in the binding). Only the engine opens it.
	PurposeAtRest = "config-at-rest"
	// PurposeInvocation is the copy in one attempt's invocation, bound to
	// that attempt. Only the worker opens it.
	PurposeInvocation = "invocation-config"
	// PurposeStep is a secret step's result (functions.StepSealer), bound
	// to the run and the step's name, not to an attempt: the worker seals
	// it and the workers of later attempts open it.
	PurposeStep = "step-result"
	// PurposePayload is a run's payload kept in object storage (its
	// variables or a result over the inline limit), bound to the run and
	// the object's key, not to an attempt: the engine and the workers of
	// every attempt open it.
	PurposePayload = "run-payload"
)

// Config seals and opens the inline configuration of runs with a [Keeper].
//
// On the engine's side it is the [sortie.ConfigSealer]: SealConfig seals a
// submission's configuration at rest, bound to the run (attempt 0,
// [PurposeAtRest]), and Seal re-seals that copy for each attempt, bound to
// the run, the attempt and the invocation version ([PurposeInvocation]).
// So the control plane only ever stores an envelope, and an attempt's
// envelope opens for that attempt only.
//
// On the worker's side it is the opener of functions.InlineConfig: Open
// opens an invocation's envelope.
type Config struct {
	k *Keeper
}

var (
	_ sortie.Sealer       = (*Config)(nil)
	_ sortie.ConfigSealer = (*Config)(nil)
)

// NewConfig returns a Config over k.
func NewConfig(k *Keeper) *Config { return &Config{k: k} }

func atRest(id sortie.RunID, agent string) Binding {
	return Binding{RunID: string(id), InvocationVersion: sortie.InvocationVersion, Purpose: PurposeAtRest, Agent: agent}
}

func forAttempt(inv *sortie.Invocation) Binding {
	return Binding{RunID: string(inv.RunID), Attempt: inv.Attempt, InvocationVersion: inv.Version,
		Purpose: PurposeInvocation, Agent: inv.Agent.Name}
}

// SealConfig implements [sortie.ConfigSealer]: it seals config at rest,
// bound to run.ID and run.Agent.Name.
func (c *Config) SealConfig(ctx context.Context, run *sortie.Run, config json.RawMessage) (json.RawMessage, error) {
	sealed, err := c.k.Seal(ctx, config, atRest(run.ID, run.Agent.Name))
	if err != nil {
		return nil, fmt.Errorf("seal the configuration of run %s at rest: %w", run.ID, err)
	}
	return sealed, nil
}

// Seal implements [sortie.Sealer]: it replaces inv.SealedConfig, the run's
// copy at rest, with an envelope bound to inv's run, attempt and version.
// An invocation without configuration is left unchanged.
func (c *Config) Seal(ctx context.Context, inv *sortie.Invocation) error {
	if len(inv.SealedConfig) == 0 {
		return nil
	}
	pt, err := c.k.Open(ctx, inv.SealedConfig, atRest(inv.RunID, inv.Agent.Name))
	if err != nil {
		return fmt.Errorf("open the configuration of run %s kept at rest: %w", inv.RunID, err)
	}
	defer clear(pt)
	sealed, err := c.k.Seal(ctx, pt, forAttempt(inv))
	if err != nil {
		return fmt.Errorf("seal the configuration of run %s for attempt %d: %w", inv.RunID, inv.Attempt, err)
	}
	inv.SealedConfig = sealed
	return nil
}

func forStep(inv *sortie.Invocation, name string) Binding {
	return Binding{RunID: string(inv.RunID), InvocationVersion: inv.Version, Purpose: PurposeStep,
		Agent: inv.Agent.Name, Subject: name}
}

// SealStep implements functions.StepSealer: it seals a secret step's
// result, bound to inv's run and agent and to the step's name
// ([PurposeStep]).
func (c *Config) SealStep(ctx context.Context, inv *sortie.Invocation, name string, result []byte) (json.RawMessage, error) {
	sealed, err := c.k.Seal(ctx, result, forStep(inv, name))
	if err != nil {
		return nil, fmt.Errorf("seal step %q of run %s: %w", name, inv.RunID, err)
	}
	return sealed, nil
}

// OpenStep implements functions.StepSealer: it opens what SealStep sealed
// for the same run, agent and step name. Errors are those of
// [Keeper.Open].
func (c *Config) OpenStep(ctx context.Context, inv *sortie.Invocation, name string, sealed json.RawMessage) ([]byte, error) {
	pt, err := c.k.Open(ctx, sealed, forStep(inv, name))
	if err != nil {
		return nil, fmt.Errorf("open step %q of run %s: %w", name, inv.RunID, err)
	}
	return pt, nil
}

// Open opens inv.SealedConfig, which must be bound to inv's run, attempt
// and version, and returns the configuration and the key-management
// requests it made (0 when the data key was cached). Errors are those of
// [Keeper.Open].
func (c *Config) Open(ctx context.Context, inv *sortie.Invocation) ([]byte, int, error) {
	pt, calls, err := c.k.open(ctx, inv.SealedConfig, forAttempt(inv))
	if err != nil {
		return nil, calls, fmt.Errorf("open the configuration of run %s attempt %d: %w", inv.RunID, inv.Attempt, err)
	}
	return pt, calls, nil
}

func forPayload(run sortie.RunID, agent, key string) Binding {
	return Binding{RunID: string(run), InvocationVersion: sortie.InvocationVersion, Purpose: PurposePayload,
		Agent: agent, Subject: key}
}

// SealPayload seals a run's payload for object storage in a large
// envelope ([Keeper.SealLarge]), bound to the run, its agent and the
// object's key ([PurposePayload]); the payload package's Sealer.
func (c *Config) SealPayload(ctx context.Context, run sortie.RunID, agent, key string, value []byte) ([]byte, error) {
	sealed, err := c.k.SealLarge(ctx, value, forPayload(run, agent, key))
	if err != nil {
		return nil, fmt.Errorf("seal payload %q of run %s: %w", key, run, err)
	}
	return sealed, nil
}

// OpenPayload opens what SealPayload sealed for the same run, agent and
// key. Errors are those of [Keeper.OpenLarge].
func (c *Config) OpenPayload(ctx context.Context, run sortie.RunID, agent, key string, sealed []byte) ([]byte, error) {
	pt, err := c.k.OpenLarge(ctx, sealed, forPayload(run, agent, key))
	if err != nil {
		return nil, fmt.Errorf("open payload %q of run %s: %w", key, run, err)
	}
	return pt, nil
}

// SubjectPayloadURLs is the subject of the envelope of an attempt's
// payload URLs ([sortie.Invocation.SealedPayloadURLs]): the purpose is
// the invocation's ([PurposeInvocation]), so the worker's grant to open
// its configuration opens them, and the subject keeps either envelope
// from passing for the other.
const SubjectPayloadURLs = "payload-urls"

func forPayloadURLs(inv *sortie.Invocation) Binding {
	b := forAttempt(inv)
	b.Subject = SubjectPayloadURLs
	return b
}

// SealPayloadURLs seals an attempt's payload URLs (package payload/sealed's
// URLs, JSON) for inv's run, attempt and version; the engine's side
// (package payload's Granter). Errors never contain urls.
func (c *Config) SealPayloadURLs(ctx context.Context, inv *sortie.Invocation, urls []byte) (json.RawMessage, error) {
	sealed, err := c.k.Seal(ctx, urls, forPayloadURLs(inv))
	if err != nil {
		return nil, fmt.Errorf("seal the payload URLs of run %s attempt %d: %w", inv.RunID, inv.Attempt, err)
	}
	return sealed, nil
}

// OpenPayloadURLs opens inv.SealedPayloadURLs, which must be bound to
// inv's run, attempt and version, and returns them and the key-management
// requests it made; the worker's side. Errors are those of
// [Keeper.Open].
func (c *Config) OpenPayloadURLs(ctx context.Context, inv *sortie.Invocation) ([]byte, int, error) {
	pt, calls, err := c.k.open(ctx, inv.SealedPayloadURLs, forPayloadURLs(inv))
	if err != nil {
		return nil, calls, fmt.Errorf("open the payload URLs of run %s attempt %d: %w", inv.RunID, inv.Attempt, err)
	}
	return pt, calls, nil
}
