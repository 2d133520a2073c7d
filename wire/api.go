package wire

import (
	"encoding/json"

	"github.com/sortie-run/sortie"
)

// IdempotencyKeyHeader is the request header of a submission's idempotency
// key (POST /v1/runs; the IETF httpapi Idempotency-Key draft's name). The
// body's idempotency_key, when also set, must be the same.
const IdempotencyKeyHeader = "Idempotency-Key"

// CancelRequest is the body of POST /v1/runs/{id}/cancel.
type CancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

// ResumeRequest is the body of POST /v1/runs/{id}/resume: the answer to the
// run's interrupt. Input absent ({}) is JSON null, as sortie resume
// without --input gives.
type ResumeRequest struct {
	Input json.RawMessage `json:"input,omitempty"`
}

// EventsPage is the JSON answer of GET /v1/runs/{id}/events without SSE:
// the events after the cursor and, once the run is terminal or interrupted
// and every event was returned, the run.
type EventsPage struct {
	Events []sortie.Event `json:"events"`
	// NextCursor is the cursor to ask from next ("ATTEMPT.SEQ").
	NextCursor string `json:"next_cursor"`
	// Run is set on the last page: the final run, payloads kept by
	// reference as references only (variables_ref, result_ref, ...):
	// GET /v1/runs/{id} reads them back.
	Run *sortie.Run `json:"run,omitempty"`
}

// PushConfigRequest is the body of PUT /v1/runs/{id}/push-configs/{cid}.
type PushConfigRequest struct {
	URL   string `json:"url"`
	KeyID string `json:"key_id,omitempty"`
}

// PushConfigList is the answer of GET /v1/runs/{id}/push-configs.
type PushConfigList struct {
	PushConfigs []sortie.PushConfig `json:"push_configs"`
}

// AgentList is the answer of GET /v1/agents: the host's agents sorted by
// name, each as GET /v1/agents/{name} answers it (a [sortie.Manifest]
// whose policy has the host's defaults applied, with its input_schema).
type AgentList struct {
	Agents []sortie.Manifest `json:"agents"`
}
