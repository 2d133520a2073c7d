package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/sortie-run/sortie"
)

// Event kinds of authorization decisions. Their data is a JSON object
// with "name" (the tool's name, or the connection's "kind" and "ref")
// and "decision" ("allowed" or "refused"): never a tool call's
// arguments, never the hook's reason.
const (
	EventToolAuthorized       = "tool.authorized"
	EventToolRefused          = "tool.refused"
	EventConnectionAuthorized = "connection.authorized"
	EventConnectionRefused    = "connection.refused"
)

// ToolCall is a tool call a handler asks to make ([Call.AuthorizeTool]):
// the run and attempt, the tool's name and its arguments (JSON; they may
// hold secrets: a hook must not log or return them).
type ToolCall struct {
	Run     sortie.RunID
	Attempt int
	Name    string
	Args    json.RawMessage
}

// Binding is a connection a handler asks to open ([Call.Connect]): the
// run and attempt, its kind ("mcp", "http", ...), the host's opaque
// reference for it (a tenant's connection ID, an MCP server's name) and
// the URL it would reach, when there is one.
type Binding struct {
	Run     sortie.RunID
	Attempt int
	Kind    string
	Ref     string
	URL     string
}

// AuthorizeToolFunc decides a tool call: nil allows it, an error refuses
// it (its message goes back to the handler, never into an event).
type AuthorizeToolFunc func(ctx context.Context, call ToolCall) error

// AuthorizeConnectionFunc decides a connection: nil allows it, an error
// refuses it.
type AuthorizeConnectionFunc func(ctx context.Context, b Binding) error

// RefusedError is the error of a refused tool call or connection: what
// was refused and the host's reason. It matches sortie.ErrRefused; a
// handler may handle it (go on without the tool) or return it.
type RefusedError struct {
	What   string // `tool "search"`, `connection mcp "crm"`
	Reason string
}

func (e *RefusedError) Error() string { return e.What + " refused by the host: " + e.Reason }

// Is makes errors.Is(err, sortie.ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == sortie.ErrRefused }

// AllowTools returns a hook allowing the tools named, refusing others.
func AllowTools(names ...string) AuthorizeToolFunc {
	allowed := setOf(names)
	return func(_ context.Context, c ToolCall) error {
		if !allowed[c.Name] {
			return errors.New("the tool is not in the host's allowlist")
		}
		return nil
	}
}

// AllowConnections returns a hook allowing the references named,
// refusing others.
func AllowConnections(refs ...string) AuthorizeConnectionFunc {
	allowed := setOf(refs)
	return func(_ context.Context, b Binding) error {
		if !allowed[b.Ref] {
			return errors.New("the connection is not in the host's allowlist")
		}
		return nil
	}
}

func setOf(items []string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, s := range items {
		m[s] = true
	}
	return m
}

// AuthorizeTool asks the host whether the run may call tool name with
// args (marshalled to JSON; nil for none): the worker's
// [Worker.AuthorizeTool] hook decides, on the host that launched the
// attempt when the handler runs on a warm worker process. The decision
// is reported as an event ([EventToolAuthorized] or [EventToolRefused])
// with the tool's name, never its arguments. A refusal is a
// [*RefusedError] (sortie.ErrRefused) the handler may handle; a worker
// without the hook refuses every tool. An invalid name or arguments over
// [sortie.MaxToolArgsBytes] is a [*sortie.ValidationError].
func (c *Call) AuthorizeTool(ctx context.Context, name string, args any) error {
	req := &sortie.AuthorizeRequest{Version: sortie.AuthorizeVersion, ID: c.nextAuthID(), Tool: &sortie.ToolRequest{Name: name}}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return sortie.Invalidf("authorize.tool.args", "marshal: %v", err)
		}
		req.Tool.Args = b
	}
	return c.authorize(ctx, req)
}

// Connect asks the host whether the run may open the connection b (its
// Run and Attempt are filled in): the worker's
// [Worker.AuthorizeConnection] hook decides, as [Call.AuthorizeTool]
// does, and the decision is reported as an event
// ([EventConnectionAuthorized] or [EventConnectionRefused]) naming the
// kind and the reference. Connect opens nothing: a handler connects
// after it returns nil, through [Call.HTTPClient] (the destination
// policy). A refusal is a [*RefusedError].
func (c *Call) Connect(ctx context.Context, b Binding) error {
	req := &sortie.AuthorizeRequest{Version: sortie.AuthorizeVersion, ID: c.nextAuthID(),
		Connection: &sortie.ConnectionRequest{Kind: b.Kind, Ref: b.Ref, URL: b.URL}}
	return c.authorize(ctx, req)
}

func (c *Call) nextAuthID() string { return strconv.FormatInt(c.authIDs.Add(1), 10) }

// hostAuthorizer is a reporter that asks the host that launched the
// attempt (a session worker's).
type hostAuthorizer interface {
	Authorize(ctx context.Context, req *sortie.AuthorizeRequest) (*SessionAuthorize, error)
}

// authorize decides req, here or on the host, and reports the decision.
func (c *Call) authorize(ctx context.Context, req *sortie.AuthorizeRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	var ans *SessionAuthorize
	if h, ok := c.out.rep.(hostAuthorizer); ok {
		var err error
		if ans, err = h.Authorize(ctx, req); err != nil {
			return err
		}
	} else {
		ans = c.decide(ctx, req)
	}
	c.reportDecision(req, ans.Allowed)
	if !ans.Allowed {
		return &RefusedError{What: subject(req), Reason: c.mask.text(ans.Reason)}
	}
	return nil
}

// decide runs the worker's hook for req; a missing hook refuses.
func (c *Call) decide(ctx context.Context, req *sortie.AuthorizeRequest) *SessionAuthorize {
	ans := &SessionAuthorize{LaunchID: c.inv.LaunchID, ID: req.ID}
	var err error
	switch {
	case req.Tool != nil && c.hooks.tool == nil:
		err = errors.New("this worker host authorizes no tool (no AuthorizeTool hook)")
	case req.Tool != nil:
		err = c.hooks.tool(ctx, ToolCall{Run: c.inv.RunID, Attempt: c.inv.Attempt, Name: req.Tool.Name, Args: req.Tool.Args})
	case c.hooks.conn == nil:
		err = errors.New("this worker host authorizes no connection (no AuthorizeConnection hook)")
	default:
		cr := req.Connection
		err = c.hooks.conn(ctx, Binding{Run: c.inv.RunID, Attempt: c.inv.Attempt, Kind: cr.Kind, Ref: cr.Ref, URL: cr.URL})
	}
	ans.Allowed = err == nil
	if err != nil {
		ans.Reason = clip(err.Error())
	}
	return ans
}

// reportDecision emits the decision's event: the name and the decision.
func (c *Call) reportDecision(req *sortie.AuthorizeRequest, allowed bool) {
	decision, kind := "refused", EventToolRefused
	data := map[string]string{}
	if req.Tool != nil {
		data["name"] = req.Tool.Name
		if allowed {
			kind = EventToolAuthorized
		}
	} else {
		data["kind"], data["ref"] = req.Connection.Kind, req.Connection.Ref
		kind = EventConnectionRefused
		if allowed {
			kind = EventConnectionAuthorized
		}
	}
	if allowed {
		decision = "allowed"
	}
	data["decision"] = decision
	_ = c.Emit(kind, "", data) // a failure to report is the next Emit's error
}

func subject(req *sortie.AuthorizeRequest) string {
	if req.Tool != nil {
		return fmt.Sprintf("tool %q", req.Tool.Name)
	}
	return fmt.Sprintf("connection %s %q", req.Connection.Kind, req.Connection.Ref)
}

// authHooks are a worker's authorization hooks.
type authHooks struct {
	tool AuthorizeToolFunc
	conn AuthorizeConnectionFunc
}

// The environment variables of a worker's authorization allowlists, as
// workers (the CLI worker, the Lambda function, the Cloud Run container)
// read them and a host hands them to its worker processes.
const (
	// EnvAllowTools lists the tools handlers may call, comma-separated.
	EnvAllowTools = "SORTIE_ALLOW_TOOLS"
	// EnvAllowConnections lists the connection references handlers may
	// open, comma-separated.
	EnvAllowConnections = "SORTIE_ALLOW_CONNECTIONS"
)

// SetAllowlists installs [AllowTools] and [AllowConnections] hooks for
// the names given; an empty list installs none, which refuses everything.
func (w *Worker) SetAllowlists(tools, connections []string) {
	if len(tools) > 0 {
		w.AuthorizeTool = AllowTools(tools...)
	}
	if len(connections) > 0 {
		w.AuthorizeConnection = AllowConnections(connections...)
	}
}
