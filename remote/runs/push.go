package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote"
)

// PushConfigs is the push-configuration surface of a Sortie host, with the
// error contract of [sortie.PushStore]. An engine of a remote host
// implements it over the host's API (server/httpengine does); for an engine
// in this process (a [sortie.LocalEngine]), the transport uses its control
// plane's [sortie.PushStore].
type PushConfigs interface {
	PutPushConfig(ctx context.Context, cfg *sortie.PushConfig) (*sortie.PushConfig, error)
	GetPushConfig(ctx context.Context, run sortie.RunID, id string) (*sortie.PushConfig, error)
	ListPushConfigs(ctx context.Context, run sortie.RunID) ([]sortie.PushConfig, error)
	DeletePushConfig(ctx context.Context, run sortie.RunID, id string) error
}

// storeConfigs adapts a control plane's [sortie.PushStore] to
// [PushConfigs].
type storeConfigs struct{ sortie.PushStore }

func (s storeConfigs) PutPushConfig(ctx context.Context, cfg *sortie.PushConfig) (*sortie.PushConfig, error) {
	return s.PushStore.PutPushConfig(ctx, cfg, time.Now().UnixMilli())
}

// pushConfigs returns the push surface of the engine at agentURL: the
// engine's own, or its control plane's; [remote.ErrUnsupported] without one.
func (t *Transport) pushConfigs(ctx context.Context, agentURL, taskID string) (PushConfigs, sortie.RunID, error) {
	if err := remote.CheckTaskRef(agentURL, taskID); err != nil {
		return nil, "", err
	}
	id := sortie.RunID(taskID)
	if err := id.Validate(); err != nil {
		return nil, "", sortie.Invalidf("task_id", "%.80q is not a Sortie run ID", taskID)
	}
	e, _, err := t.engine(ctx, agentURL)
	if err != nil {
		return nil, "", err
	}
	if p, ok := e.(PushConfigs); ok {
		return p, id, nil
	}
	if l, ok := e.(sortie.LocalEngine); ok {
		return storeConfigs{l.ControlPlane()}, id, nil
	}
	return nil, "", fmt.Errorf("runs: push configurations of %s: %w", sortie.SafeURL(agentURL), remote.ErrUnsupported)
}

// SetPushConfig stores a webhook of the run taskID; see
// [remote.TaskTransport.SetPushConfig]. cfg.Token and cfg.Auth are refused
// with a [*sortie.ValidationError] (the host signs deliveries with its own
// key and stores no secret); an empty configID gets a generated one.
func (t *Transport) SetPushConfig(ctx context.Context, agentURL, taskID, configID string, cfg remote.PushConfig) (*remote.PushBinding, error) {
	if cfg.Token != "" {
		return nil, sortie.Invalidf("token", "a Sortie host signs each delivery with its webhook key (Standard Webhooks) and stores no token; verify the signature instead")
	}
	if cfg.Auth != nil {
		return nil, sortie.Invalidf("authentication", "a Sortie host stores no push credentials; verify the delivery signature instead")
	}
	p, id, err := t.pushConfigs(ctx, agentURL, taskID)
	if err != nil {
		return nil, err
	}
	if configID == "" {
		configID = sortie.NewLaunchID()
	}
	stored, err := p.PutPushConfig(ctx, &sortie.PushConfig{RunID: id, ID: configID, URL: cfg.URL, KeyID: cfg.KeyID})
	if err != nil {
		return nil, taskErr("set a push configuration of", taskID, err)
	}
	return binding(stored), nil
}

// GetPushConfig returns one webhook of the run; see
// [remote.TaskTransport.GetPushConfig].
func (t *Transport) GetPushConfig(ctx context.Context, agentURL, taskID, configID string) (*remote.PushBinding, error) {
	p, id, err := t.pushConfigs(ctx, agentURL, taskID)
	if err != nil {
		return nil, err
	}
	c, err := p.GetPushConfig(ctx, id, configID)
	if err != nil {
		return nil, taskErr("get push configuration "+configID+" of", taskID, err)
	}
	return binding(c), nil
}

// ListPushConfigs returns every webhook of the run (at most
// [sortie.MaxPushConfigs], so pageSize and pageToken are not needed and
// ignored); see [remote.TaskTransport.ListPushConfigs].
func (t *Transport) ListPushConfigs(ctx context.Context, agentURL, taskID string, pageSize int, pageToken string) ([]remote.PushBinding, error) {
	p, id, err := t.pushConfigs(ctx, agentURL, taskID)
	if err != nil {
		return nil, err
	}
	cs, err := p.ListPushConfigs(ctx, id)
	if err != nil {
		return nil, taskErr("list push configurations of", taskID, err)
	}
	out := make([]remote.PushBinding, 0, len(cs))
	for i := range cs {
		out = append(out, *binding(&cs[i]))
	}
	return out, nil
}

// DeletePushConfig removes one webhook of the run; see
// [remote.TaskTransport.DeletePushConfig].
func (t *Transport) DeletePushConfig(ctx context.Context, agentURL, taskID, configID string) error {
	p, id, err := t.pushConfigs(ctx, agentURL, taskID)
	if err != nil {
		return err
	}
	return taskErr("delete push configuration "+configID+" of", taskID, p.DeletePushConfig(ctx, id, configID))
}

func binding(c *sortie.PushConfig) *remote.PushBinding {
	return &remote.PushBinding{ID: c.ID, TaskID: c.RunID.String(), Config: remote.PushConfig{URL: c.URL, KeyID: c.KeyID}}
}
