package interop

import (
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie/internal/testwait"
)

// run is the part of GET /v1/runs/{id} the suite checks.
type run struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Agent  struct{ Name string }
	Result any `json:"result"`
}

func (h *host) run(t *testing.T, id string) run {
	t.Helper()
	var r run
	h.get(t, "/v1/runs/"+id, &r)
	return r
}

// TestThirdPartyClients drives one `sortie serve` with each client in
// turn, cross-checks what each reports against the host, and then scrapes
// its metrics.
func TestThirdPartyClients(t *testing.T) {
	requireNode(t)
	h := startHost(t)
	ran := 0
	for _, binding := range []string{"JSONRPC", "HTTP+JSON"} {
		t.Run("a2a "+binding, func(t *testing.T) {
			var got struct {
				ContextID string   `json:"context_id"`
				Completed []string `json:"completed"`
				Cancelled string   `json:"cancelled"`
			}
			// Nothing listens on port 9 of loopback: those deliveries fail.
			h.node(t, "a2a.mjs", &got, "A2A_BINDING="+binding, "HOOK_URL=http://127.0.0.1:9/hook")
			for _, id := range got.Completed {
				if r := h.run(t, id); r.State != "completed" || r.Agent.Name != "probe" {
					t.Errorf("run %s of a completed task: %+v, want completed probe", id, r)
				}
			}
			if r := h.run(t, got.Cancelled); r.State != "cancelled" {
				t.Errorf("run %s of the cancelled task is %s", got.Cancelled, r.State)
			}
			var page struct{ Runs []run }
			h.get(t, "/v1/runs?context_id="+url.QueryEscape(got.ContextID), &page)
			if len(page.Runs) != 3 {
				t.Errorf("runs of context %s over the HTTP API: %d, want 3 (two completed, one cancelled)", got.ContextID, len(page.Runs))
			}
			ran += 3
		})
	}
	t.Run("eventsource", func(t *testing.T) {
		var got struct {
			Run    string
			Events []string
		}
		h.node(t, "sse.mjs", &got)
		var page struct{ Events []struct{ Attempt, Seq int } }
		h.get(t, "/v1/runs/"+got.Run+"/events", &page)
		var stored []string
		for _, e := range page.Events {
			stored = append(stored, cursor(e.Attempt, e.Seq))
		}
		if d := cmp.Diff(stored, got.Events); d != "" {
			t.Errorf("events the EventSource saw differ from the stored ones (-stored +seen):\n%s", d)
		}
		ran++
	})
	t.Run("standardwebhooks", func(t *testing.T) {
		var got struct {
			Run, Task string
			Verified  int
		}
		h.node(t, "webhooks.mjs", &got, "WEBHOOK_SECRET="+h.webhookSecret(t))
		if r := h.run(t, got.Run); r.State != "completed" {
			t.Errorf("run %s is %s, want completed", got.Run, r.State)
		}
		if r := h.run(t, got.Task); r.State != "cancelled" {
			t.Errorf("run %s of the task is %s, want cancelled", got.Task, r.State)
		}
		ran += 2
	})
	t.Run("cloudevents", func(t *testing.T) {
		var got struct{ Runs map[string]string }
		h.node(t, "cloudevents.mjs", &got)
		for mode, id := range got.Runs {
			r := h.run(t, id)
			if r.Agent.Name != "probe" {
				t.Errorf("run %s of the %s event: %+v, want a probe run", id, mode, r)
			}
		}
		if len(got.Runs) != 2 {
			t.Errorf("runs of CloudEvents %v, want binary and structured", got.Runs)
		}
		ran += 2
	})
	t.Run("retry", func(t *testing.T) {
		// A run whose first attempt fails retryably: the reconciler
		// launches attempt 2 after the backoff.
		id := h.post(t, "/v1/runs", `{"agent": "probe", "variables": {"events": 0, "fail": "once", "retryable": true, "fail_attempts": 1},
			"policy": {"backoff_ms": 10, "backoff_max_ms": 10}}`)
		testwait.Until(t, "the retried run to complete", time.Minute, func() bool { return h.run(t, id).State == "completed" })
		ran++
	})
	t.Run("metrics", func(t *testing.T) { h.checkMetrics(t, ran) })
}
