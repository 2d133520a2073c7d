package probe

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
)

// PolicyResult is the probe's result with model, tool or connect: the
// resolved model, and each decision ("allowed" or "refused") with the
// refusal's message.
type PolicyResult struct {
	Model           *sortie.ModelProfile       `json:"model,omitempty"`
	Tool            string                     `json:"tool,omitempty"`
	ToolError       string                     `json:"tool_error,omitempty"`
	Connection      string                     `json:"connection,omitempty"`
	ConnectionError string                     `json:"connection_error,omitempty"`
	Webhook         *functions.WebhookResponse `json:"webhook,omitempty"`
}

// policy resolves the model profile, asks for the tool call and the
// connection, and runs the webhook step; ok reports that one of them was asked for. A refused tool
// or connection is handled (its decision is the result); a refused model
// fails the attempt, permanently.
func (v *Variables) policy(ctx context.Context, call *functions.Call) (out *PolicyResult, ok bool, err error) {
	out = &PolicyResult{}
	if v.Model != "" {
		m, err := call.Model(v.Model)
		if err != nil {
			return nil, true, functions.Permanent(err)
		}
		out.Model = &m
	}
	if v.Tool != "" {
		if out.Tool, out.ToolError, err = decision(call.AuthorizeTool(ctx, v.Tool, v.ToolArgs)); err != nil {
			return nil, true, err
		}
	}
	if v.Connect != "" {
		b := functions.Binding{Kind: "mcp", Ref: v.Connect}
		if out.Connection, out.ConnectionError, err = decision(call.Connect(ctx, b)); err != nil {
			return nil, true, err
		}
	}
	if v.Webhook != "" {
		body, _ := json.Marshal(map[string]string{"run": string(call.RunID())})
		if out.Webhook, err = call.Webhook(ctx, "webhook", functions.WebhookRequest{URL: v.Webhook, Body: body}); err != nil {
			return nil, true, err
		}
	}
	return out, v.Model != "" || v.Tool != "" || v.Connect != "" || v.Webhook != "", nil
}

// decision turns an authorization's error into its decision; an error
// other than a refusal is returned.
func decision(err error) (string, string, error) {
	switch {
	case err == nil:
		return "allowed", "", nil
	case errors.Is(err, sortie.ErrRefused):
		return "refused", err.Error(), nil
	}
	return "", "", err
}

// toolArgs are the arguments the probe's tool call carries.
type toolArgs = json.RawMessage
