package mcpconn_test

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/mcpconn"
)

// A handler calls a tool of the MCP server its host allows as "crm"; the
// worker host allows the connection and the server's host.
func ExampleConnect() {
	handler := func(ctx context.Context, call *functions.Call) (any, error) {
		s, err := mcpconn.Connect(ctx, call, "crm", "https://mcp.crm.example.com/mcp", nil)
		if err != nil {
			return nil, err // a refusal matches sortie.ErrRefused
		}
		defer s.Close()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"id": 42}})
		if err != nil {
			return nil, err
		}
		return res.StructuredContent, nil
	}
	reg := functions.NewRegistry()
	reg.Register("crm-agent", handler)
	_ = &functions.Worker{Registry: reg, AuthorizeConnection: functions.AllowConnections("crm")}
}
