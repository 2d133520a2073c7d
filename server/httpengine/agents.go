package httpengine

import (
	"context"
	"net/http"
	"net/url"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

var _ sortie.AgentDirectory = (*Engine)(nil)

// ListAgents returns the host's agents sorted by name (GET /v1/agents),
// each with the host's policy defaults applied and its input schema.
func (e *Engine) ListAgents(ctx context.Context) ([]sortie.Manifest, error) {
	var out wire.AgentList
	if _, err := e.do(ctx, http.MethodGet, "/v1/agents", nil, nil, &out, nil); err != nil {
		return nil, err
	}
	return out.Agents, nil
}

// DescribeAgent returns one of the host's agents (GET
// /v1/agents/{name}): an error wrapping [sortie.ErrNotFound] when the
// host has none of that name, a [*sortie.ValidationError] naming "agent"
// for a malformed name (checked before anything is sent).
func (e *Engine) DescribeAgent(ctx context.Context, name string) (*sortie.Manifest, error) {
	if err := sortie.CheckAgentName(name); err != nil {
		return nil, err
	}
	var m sortie.Manifest
	if _, err := e.do(ctx, http.MethodGet, "/v1/agents/"+url.PathEscape(name), nil, nil, &m, nil); err != nil {
		return nil, err
	}
	return &m, nil
}
