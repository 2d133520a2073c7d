package httpengine

import (
	"context"
	"net/http"
	"net/url"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// PutPushConfig sets the run's push configuration cfg.ID (create or
// replace) and returns what the host stored. The host refuses a URL its
// destination policy refuses ([*sortie.ValidationError] naming "url").
func (e *Engine) PutPushConfig(ctx context.Context, cfg *sortie.PushConfig) (*sortie.PushConfig, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var out sortie.PushConfig
	body := wire.PushConfigRequest{URL: cfg.URL, KeyID: cfg.KeyID}
	if _, err := e.do(ctx, http.MethodPut, pushPath(cfg.RunID, cfg.ID), nil, body, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetPushConfig returns one push configuration; ErrNotFound when absent.
func (e *Engine) GetPushConfig(ctx context.Context, run sortie.RunID, id string) (*sortie.PushConfig, error) {
	var out sortie.PushConfig
	if _, err := e.do(ctx, http.MethodGet, pushPath(run, id), nil, nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListPushConfigs returns the run's push configurations by ID.
func (e *Engine) ListPushConfigs(ctx context.Context, run sortie.RunID) ([]sortie.PushConfig, error) {
	var out wire.PushConfigList
	if _, err := e.do(ctx, http.MethodGet, runPath(run, "/push-configs"), nil, nil, &out, nil); err != nil {
		return nil, err
	}
	return out.PushConfigs, nil
}

// DeletePushConfig removes one push configuration; ErrNotFound when absent.
func (e *Engine) DeletePushConfig(ctx context.Context, run sortie.RunID, id string) error {
	_, err := e.do(ctx, http.MethodDelete, pushPath(run, id), nil, nil, nil, nil)
	return err
}

func pushPath(run sortie.RunID, id string) string {
	return runPath(run, "/push-configs/"+url.PathEscape(id))
}
