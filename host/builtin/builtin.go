package builtin

import (
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/examples/textstats"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
)

// Agents returns the built-in agents' manifests by name, a new map each
// call (callers add their own).
func Agents() sortie.Agents {
	return sortie.Agents{
		"textstats": textstats.Manifest,
		"probe": {Name: "probe", Version: "1", Runtime: "go:probe", InputSchema: probe.InputSchema,
			Description: "Programmable test agent: emits events, runs durable steps, then completes, fails, crashes, interrupts or sleeps as its variables say."},
	}
}

// Registry returns a new registry holding the built-in agents' handlers
// ("go:textstats" and "go:probe").
func Registry() *functions.Registry {
	r := functions.NewRegistry()
	textstats.Register(r)
	probe.Register(r)
	return r
}
