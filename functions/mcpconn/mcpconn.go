// Package mcpconn connects a handler to MCP servers (the Model Context
// Protocol, with the official Go SDK, github.com/modelcontextprotocol/go-sdk)
// under its host's policies: the host authorizes each connection for the
// run ([functions.Call.Connect], a binding of kind "mcp"), and every
// request goes through the worker's destination policy
// ([functions.Call.HTTPClient]), so a refused server is never connected
// to. It is a package of its own so that workers that use no MCP server
// (the Lambda bootstrap) do not link the SDK.
package mcpconn

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sortie-run/sortie/functions"
)

// Kind is the binding kind of MCP connections.
const Kind = "mcp"

// defaultClient names the client to servers when Connect gets none.
var defaultClient = &mcp.Implementation{Name: "sortie", Version: "v1"}

// Connect opens an MCP client session with the server at endpoint (the
// Streamable HTTP transport) for the run of call. ref is the host's
// opaque name for the connection, which its AuthorizeConnection hook
// decides on with the endpoint; impl names the client (nil: "sortie").
// A refused connection is a [*functions.RefusedError] (sortie.ErrRefused)
// returned before any request; a destination the policy refuses fails
// before any connection to it. The caller closes the session.
func Connect(ctx context.Context, call *functions.Call, ref, endpoint string, impl *mcp.Implementation) (*mcp.ClientSession, error) {
	if err := call.Connect(ctx, functions.Binding{Kind: Kind, Ref: ref, URL: endpoint}); err != nil {
		return nil, err
	}
	if impl == nil {
		impl = defaultClient
	}
	t := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: call.HTTPClient(), MaxRetries: -1}
	s, err := mcp.NewClient(impl, nil).Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp %q: connect: %w", ref, err)
	}
	return s, nil
}
