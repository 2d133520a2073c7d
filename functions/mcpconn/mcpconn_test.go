package mcpconn_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/mcpconn"
	"github.com/sortie-run/sortie/internal/hooktest"
)

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

// mcpServer is an MCP server on loopback (Streamable HTTP) with the tool
// "add"; it counts the connections it accepts.
func mcpServer(t *testing.T) (string, func() int64) {
	s := mcp.NewServer(&mcp.Implementation{Name: "adder", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "adds a and b"}, func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
		return nil, addOut{Sum: in.A + in.B}, nil
	})
	srv := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	accepts := hooktest.CountAccepts(srv)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, accepts.Load
}

// adder is a handler that connects to the MCP server of the variable
// "url" as connection "tools" and calls add(2, 3).
func adder(ctx context.Context, c *functions.Call) (any, error) {
	var v struct {
		URL string `json:"url"`
	}
	if err := c.Variables(&v); err != nil {
		return nil, err
	}
	s, err := mcpconn.Connect(ctx, c, "tools", v.URL, nil)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]int{"a": 2, "b": 3}})
	if err != nil {
		return nil, err
	}
	return res.StructuredContent, nil
}

// run executes one attempt of adder on w against the server at url.
func run(t *testing.T, w *functions.Worker, url string) sortie.Outcome {
	t.Helper()
	reg := functions.NewRegistry()
	reg.Register("adder", adder)
	w.Registry, w.Logger = reg, slog.New(slog.NewTextHandler(io.Discard, nil))
	cp := memory.New()
	defer cp.Close()
	inv := launched(t, cp, `{"url":"`+url+`"}`)
	o, err := w.Execute(t.Context(), inv, functions.NewControlPlaneReporter(cp, inv, "mcp-test"))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// An authorized connection to an allowed destination calls the tool.
func TestConnectCallsATool(t *testing.T) {
	url, _ := mcpServer(t)
	o := run(t, &functions.Worker{Destinations: destination.LoopbackHTTP(), AuthorizeConnection: functions.AllowConnections("tools")}, url)
	var out addOut
	if o.Error != nil || json.Unmarshal(o.Result, &out) != nil || out.Sum != 5 {
		t.Fatalf("outcome %s %+v, want {\"sum\":5}", o.Result, o.Error)
	}
}

// A connection the host refuses, or to a destination its policy
// refuses, fails before any connection to the server.
func TestRefusedConnectionsNeverConnect(t *testing.T) {
	url, accepts := mcpServer(t)
	for name, w := range map[string]*functions.Worker{
		"no hook":             {Destinations: destination.LoopbackHTTP()},
		"another ref allowed": {Destinations: destination.LoopbackHTTP(), AuthorizeConnection: functions.AllowConnections("crm")},
		"destination refused": {AuthorizeConnection: functions.AllowConnections("tools")},
	} {
		o := run(t, w, url)
		switch {
		case o.Error == nil:
			t.Errorf("%s: outcome %s, want an error", name, o.Result)
		case name != "destination refused" && (o.Error.Type != "refused" || o.Error.Retryable):
			t.Errorf("%s: error %+v, want type refused, not retryable", name, o.Error)
		case name == "destination refused" && !strings.Contains(o.Error.Message, "destination"):
			t.Errorf("%s: error %+v, want it to name the destination refusal", name, o.Error)
		}
	}
	if n := accepts(); n != 0 {
		t.Errorf("refused connections made %d connections to the server, want none", n)
	}
}

// launched reserves a run of go:adder and records its first launch.
func launched(t *testing.T, cp sortie.ControlPlane, vars string) *sortie.Invocation {
	t.Helper()
	ctx, now := t.Context(), time.Now()
	run := &sortie.Run{ID: sortie.NewRunID(now), Agent: sortie.Manifest{Name: "adder", Runtime: "go:adder"},
		Variables: json.RawMessage(vars), Policy: sortie.Policy{HeartbeatMs: 1000, LeaseMs: 5000}}
	if _, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: run.ID, Attempt: 1, LaunchID: sortie.NewLaunchID(),
		Agent: run.Agent, Variables: run.Variables, DeadlineMs: now.Add(time.Minute).UnixMilli(),
		HeartbeatMs: 1000, LeaseMs: 5000, Report: sortie.Report{Mode: sortie.ReportControlPlane}}
	if _, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: inv.LaunchID, NowMs: now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	return inv
}
