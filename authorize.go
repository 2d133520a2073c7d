package sortie

import (
	"encoding/json"
	"regexp"
)

// AuthorizeVersion names the format of a worker's authorize message
// ([AuthorizeRequest]), version 1.
const AuthorizeVersion = "sortie.authorize/v1"

// MaxToolArgsBytes bounds a tool call's arguments in an authorize
// message.
const MaxToolArgsBytes = 64 << 10

// toolPattern is the rule of tool names and connection references: 1-128
// characters of A-Z, a-z, 0-9, '.', '_', ':', '/' or '-'.
var toolPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`)

// AuthorizeRequest is a worker's question to its host (the NDJSON
// "authorize" message, format [AuthorizeVersion]): may the run call this
// tool, or open this connection? Exactly one of Tool and Connection is
// set. The host answers a session worker with an authorize frame
// (functions.SessionAuthorize) naming ID; the decision is recorded as an
// event with the tool's name or the connection's reference and the
// decision, never the arguments.
type AuthorizeRequest struct {
	// Version is [AuthorizeVersion].
	Version string `json:"version"`
	// ID matches the answer to the question: 1-64 characters, unique
	// among the attempt's questions in flight.
	ID         string             `json:"id"`
	Tool       *ToolRequest       `json:"tool,omitempty"`
	Connection *ConnectionRequest `json:"connection,omitempty"`
}

// ToolRequest names a tool call: the tool and its arguments (JSON of at
// most [MaxToolArgsBytes]; they may hold secrets and are never stored).
type ToolRequest struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// ConnectionRequest names a connection binding: its kind ("mcp",
// "http", ...), the host's opaque reference for it, and the URL it
// would reach, when there is one.
type ConnectionRequest struct {
	Kind string `json:"kind"`
	Ref  string `json:"ref"`
	URL  string `json:"url,omitempty"`
}

// Validate checks the version, the ID and exactly one of Tool and
// Connection.
func (a *AuthorizeRequest) Validate() error {
	if a.Version != AuthorizeVersion {
		return invalidf("authorize.version", "%.40q is not supported (want %q)", a.Version, AuthorizeVersion)
	}
	if a.ID == "" || len(a.ID) > 64 {
		return invalidf("authorize.id", "must be 1-64 bytes, got %d", len(a.ID))
	}
	switch {
	case (a.Tool == nil) == (a.Connection == nil):
		return invalidf("authorize", "set exactly one of tool and connection")
	case a.Tool != nil:
		if err := CheckToolName("authorize.tool.name", a.Tool.Name); err != nil {
			return err
		}
		return checkJSON("authorize.tool.args", a.Tool.Args, MaxToolArgsBytes)
	}
	return a.Connection.Validate("authorize.connection")
}

// Validate checks a connection's kind (a name), reference (a tool-like
// name) and URL (at most 2048 bytes), naming field.
func (c *ConnectionRequest) Validate(field string) error {
	if err := checkName(field+".kind", c.Kind); err != nil {
		return err
	}
	if err := CheckToolName(field+".ref", c.Ref); err != nil {
		return err
	}
	if len(c.URL) > 2048 {
		return invalidf(field+".url", "%d bytes, limit 2048", len(c.URL))
	}
	return nil
}

// CheckToolName checks a tool name or a connection reference: 1-128
// characters of A-Z, a-z, 0-9, '.', '_', ':', '/' or '-', starting with
// a letter or digit. It returns a [*ValidationError] for field.
func CheckToolName(field, name string) error {
	if !toolPattern.MatchString(name) {
		return invalidf(field, "%.128q must be 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':', '/' or '-', starting with a letter or digit", name)
	}
	return nil
}
