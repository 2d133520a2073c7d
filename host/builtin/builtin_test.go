package builtin_test

import (
	"strings"
	"testing"

	"github.com/sortie-run/sortie/host/builtin"
)

// Every built-in agent is a valid manifest whose Go handler the registry
// holds, and each call returns a map of its own.
func TestAgentsHaveHandlers(t *testing.T) {
	agents, reg := builtin.Agents(), builtin.Registry()
	for _, name := range []string{"textstats", "probe"} {
		m, ok := agents[name]
		if !ok {
			t.Fatalf("Agents() lacks %s", name)
		}
		if err := m.Validate(); err != nil {
			t.Errorf("Agents()[%s].Validate() = %v, want nil", name, err)
		}
		handler, ok := strings.CutPrefix(m.Runtime, "go:")
		if _, found := reg.Lookup(handler); !ok || !found {
			t.Errorf("agent %s runs %q; want a go: runtime the registry holds", name, m.Runtime)
		}
	}
	delete(agents, "probe")
	if _, ok := builtin.Agents()["probe"]; !ok {
		t.Error("deleting from one Agents() map changed the next one")
	}
}
