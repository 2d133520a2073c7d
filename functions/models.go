package functions

import (
	"errors"

	"github.com/sortie-run/sortie"
)

// Model resolves the model ref names for the handler: the run's profile
// of that name (the agent's [sortie.Manifest.Models], or the
// submission's), or a bare "PROVIDER/MODEL" when the worker's model
// policy ([Worker.Models]) does not require profiles. A refusal wraps
// sortie.ErrRefused and names the profile and the rule
// (require_profiles, allowed_models, allow_manifest_options); the
// handler may handle it (try another profile) or return it.
func (c *Call) Model(ref string) (sortie.ModelProfile, error) {
	return c.models.Resolve(c.inv.Agent.Models, ref)
}

// checkModels refuses an attempt whose run names a model profile the
// worker's policy does not allow (the host that accepted the run may
// have had another policy): error type "rejected", naming the profile
// and the rule.
func (w *Worker) checkModels(inv *sortie.Invocation) *sortie.Outcome {
	err := w.Models.CheckProfiles("agent.models", inv.Agent.Models)
	var ve *sortie.ValidationError
	if errors.As(err, &ve) {
		o := errorOutcome(sortie.ErrorTypeRejected, "this worker's model policy refuses the run: "+ve.Error(), false)
		return &o
	}
	return nil
}
