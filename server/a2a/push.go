package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/push"
)

// errNoPush answers the push methods when the host keeps no push
// configurations.
var errNoPush = a2a.NewError(a2a.ErrPushNotificationNotSupported, "this host keeps no push configurations")

// checkPush refuses a push configuration this host would not deliver as
// asked: a token when the host has no [TokenSealer] or one that is not a
// plain header value, authentication credentials (secrets the host does
// not keep: it signs every delivery with its own webhook key instead, per
// Standard Webhooks), or a URL the destination policy refuses. field
// prefixes the error's field. No error shows a token or credential.
func (h *requestHandler) checkPush(cfg *a2a.PushConfig, field string) (*a2a.PushConfig, error) {
	if h.push == nil {
		return nil, errNoPush
	}
	if cfg.Token != "" && h.opts.TokenSealer == nil {
		return nil, invalid(join(field, "token"), "not stored: this host keeps no push tokens (it has no sealer for them); it signs each delivery (Standard Webhooks headers webhook-id, webhook-timestamp, webhook-signature) with its webhook key, so verify the signature instead")
	}
	if cfg.Token != "" && !push.ValidToken(cfg.Token) {
		return nil, invalid(join(field, "token"), "must be 1-%d bytes of visible ASCII and inner spaces (it is sent back as the %s header), got %d bytes", MaxTokenBytes, tokenHeader, len(cfg.Token))
	}
	if cfg.Auth != nil {
		return nil, invalid(join(field, "authentication"), "not stored: push credentials are secrets this host does not keep; verify the Standard Webhooks signature of each delivery instead")
	}
	if h.opts.CheckPushURL != nil && cfg.URL != "" {
		if err := h.opts.CheckPushURL(cfg.URL); err != nil {
			return nil, invalid(join(field, "url"), "refused by the destination policy: %v", err)
		}
	}
	c := *cfg
	return &c, nil
}

// tokenHeader names the header a delivery carries the token in, for
// error messages (server/push sends it, and its X- spelling).
const tokenHeader = push.TokenHeader

func join(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}

// putPush stores cfg (checked) for its task in the A2A format, its token
// sealed; an empty ID gets a generated one. field prefixes the fields of
// errors.
func (h *requestHandler) putPush(ctx context.Context, cfg *a2a.PushConfig, field string) (*a2a.PushConfig, error) {
	id, err := runID("taskId", cfg.TaskID)
	if err != nil {
		return nil, err
	}
	sc := &sortie.PushConfig{RunID: id, ID: cfg.ID, URL: cfg.URL, Format: sortie.PushFormatA2A}
	if sc.ID == "" {
		sc.ID = sortie.NewLaunchID()
	}
	if err := sc.Validate(); err != nil {
		return nil, fromSortie(err, nil)
	}
	if sc.SealedToken, err = h.sealToken(ctx, sc, cfg.Token, field); err != nil {
		return nil, err
	}
	stored, err := h.push.PutPushConfig(ctx, sc, time.Now().UnixMilli())
	if err != nil {
		return nil, fromSortie(err, h.log)
	}
	if h.opts.PushChanged != nil {
		h.opts.PushChanged(id)
	}
	return toA2APush(stored), nil
}

// sealToken seals token ("" for none) for cfg's run and ID.
func (h *requestHandler) sealToken(ctx context.Context, cfg *sortie.PushConfig, token, field string) (json.RawMessage, error) {
	if token == "" {
		return nil, nil
	}
	sealed, err := h.opts.TokenSealer.SealToken(ctx, cfg.RunID, cfg.ID, []byte(token))
	if err != nil {
		return nil, fromSortie(fmt.Errorf("a2a: seal the push token of %s/%s: %w", cfg.RunID, cfg.ID, err), h.log)
	}
	if len(sealed) > sortie.MaxSealedTokenBytes {
		return nil, invalid(join(field, "token"), "sealed, it takes %d bytes, over the limit of %d; send a shorter token", len(sealed), sortie.MaxSealedTokenBytes)
	}
	return sealed, nil
}

// toA2APush is a stored configuration as A2A clients see it: without its
// token, which is write-only (A2A lets a server omit it).
func toA2APush(c *sortie.PushConfig) *a2a.PushConfig {
	return &a2a.PushConfig{TaskID: a2a.TaskID(c.RunID), ID: c.ID, URL: c.URL}
}

// CreateTaskPushConfig stores a webhook of the task, in the A2A format and
// with its token sealed; see checkPush for what is refused. The answer
// omits the token.
func (h *requestHandler) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (*a2a.PushConfig, error) {
	cfg, err := h.checkPush(req, "")
	if err != nil {
		return nil, err
	}
	return h.putPush(ctx, cfg, "")
}

// pushTarget checks the push surface and the task ID of a push call.
func (h *requestHandler) pushTarget(task a2a.TaskID) (sortie.RunID, error) {
	if h.push == nil {
		return "", errNoPush
	}
	return runID("taskId", task)
}

// GetTaskPushConfig returns one webhook of the task, without its token.
func (h *requestHandler) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	id, err := h.pushTarget(req.TaskID)
	if err != nil {
		return nil, err
	}
	c, err := h.push.GetPushConfig(ctx, id, req.ID)
	if errors.Is(err, sortie.ErrNotFound) {
		return nil, a2a.NewError(a2a.ErrTaskNotFound, "push configuration not found")
	} else if err != nil {
		return nil, fromSortie(err, h.log)
	}
	return toA2APush(c), nil
}

// ListTaskPushConfigs returns every webhook of the task, without tokens:
// a task has at most [sortie.MaxPushConfigs], so there is one page.
func (h *requestHandler) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	id, err := h.pushTarget(req.TaskID)
	if err != nil {
		return nil, err
	}
	cs, err := h.push.ListPushConfigs(ctx, id)
	if err != nil {
		return nil, fromSortie(err, h.log)
	}
	out := &a2a.ListTaskPushConfigResponse{Configs: make([]*a2a.PushConfig, 0, len(cs))}
	for i := range cs {
		out.Configs = append(out.Configs, toA2APush(&cs[i]))
	}
	return out, nil
}

// DeleteTaskPushConfig removes one webhook of the task; removing one that
// is already gone is not an error, for a task that exists.
func (h *requestHandler) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) error {
	id, err := h.pushTarget(req.TaskID)
	if err != nil {
		return err
	}
	err = h.push.DeletePushConfig(ctx, id, req.ID)
	if errors.Is(err, sortie.ErrNotFound) {
		_, err = h.engine.Get(ctx, id)
	}
	if err != nil {
		return fromSortie(err, h.log)
	}
	if h.opts.PushChanged != nil {
		h.opts.PushChanged(id)
	}
	return nil
}
