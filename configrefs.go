package sortie

import "slices"

// MaxConfigRefs is the most configuration references one run may name
// ([SubmitRequest.ConfigRefs]).
const MaxConfigRefs = 16

// MetaConfigRefs is the metadata key (of an A2A message, or of a remote
// call to a Sortie host) whose value, a list of strings, names the
// configuration references of the run the message starts: they become
// [SubmitRequest.ConfigRefs], not labels.
const MetaConfigRefs = "sortie/config_refs"

// ConfigRefChecker is the host's allowlist of configuration references, as
// the engine checks a submission against it: a reference is an opaque ID
// the worker's host resolves to a value (from the worker's environment, a
// host-pinned file or a secret store) when the attempt executes. The
// engine refuses at submit a run whose references the checker refuses;
// without a checker it refuses every reference.
type ConfigRefChecker interface {
	// CheckConfigRefs returns nil when a run of agent may name every ID
	// in refs, and otherwise a [*ValidationError] for field
	// "config_refs" naming the first ID refused and why (unknown, not
	// for this agent, or two IDs setting one variable). It never names
	// where a reference's value comes from.
	CheckConfigRefs(agent string, refs []string) error
}

// checkConfigRefs checks the syntax of a submission's references: at most
// [MaxConfigRefs] names, each 1-63 characters of a-z, 0-9, '.', '_' or
// '-' starting with a letter or digit, none twice.
func checkConfigRefs(refs []string) error {
	if len(refs) > MaxConfigRefs {
		return invalidf("config_refs", "%d references, limit %d", len(refs), MaxConfigRefs)
	}
	for i, ref := range refs {
		if err := checkName("config_refs", ref); err != nil {
			return err
		}
		if slices.Contains(refs[:i], ref) {
			return invalidf("config_refs", "%.80q is named twice", ref)
		}
	}
	return nil
}

// checkRefsAllowed asks the engine's checker about the run's references.
func (e *Engine) checkRefsAllowed(agent string, refs []string) error {
	if len(refs) == 0 {
		return nil
	}
	if e.opts.ConfigRefs == nil {
		return invalidf("config_refs", "%.80q is not a configuration reference of this host (it has none)", refs[0])
	}
	return e.opts.ConfigRefs.CheckConfigRefs(agent, refs)
}
