package functions_test

import (
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
)

// A worker whose model policy refuses a profile of the run rejects the
// attempt before its handler starts (the host that accepted the run may
// have had another policy).
func TestWorkerRejectsRefusedModel(t *testing.T) {
	w := stdioWorker()
	w.Models = &sortie.ModelPolicy{AllowedModels: []string{"openai/gpt-5.6"}}
	cp := memory.New()
	defer cp.Close()
	inv := launched(t, cp, `{"events":1}`)
	inv.Agent.Models = map[string]sortie.ModelProfile{"primary": {Provider: "anthropic", Model: "claude-x"}}
	o, err := w.Execute(t.Context(), inv, functions.NewControlPlaneReporter(cp, inv, "models-test"))
	if err != nil || o.Error == nil || o.Error.Type != sortie.ErrorTypeRejected || !strings.Contains(o.Error.Message, "agent.models.primary.model") {
		t.Fatalf("Execute = %+v, %v; want rejected naming agent.models.primary.model", o, err)
	}
	if evs, _ := cp.Events(t.Context(), inv.RunID, sortie.Cursor{}, 0); len(evs) != 0 {
		t.Errorf("the handler ran: events %+v", evs)
	}
}
