package server

import "github.com/sortie-run/sortie"

// public is the run as the API shows it: without its sealed configuration
// (ciphertext clients cannot use) and request hash, and without the host's
// process IDs, command paths and log paths of local attempts.
func public(run *sortie.Run) *sortie.Run {
	if run == nil {
		return nil
	}
	c := *run
	c.SealedConfig, c.RequestHash = nil, ""
	c.Attempts = append([]sortie.Attempt(nil), run.Attempts...)
	for i := range c.Attempts {
		if ref := c.Attempts[i].Ref; ref != nil && ref.Provider == "local" {
			c.Attempts[i].Ref = &sortie.Ref{Provider: ref.Provider, RunID: ref.RunID, Attempt: ref.Attempt, LaunchID: ref.LaunchID}
		}
	}
	return &c
}

// publicPage applies [public] to every run of a page.
func publicPage(p *sortie.RunPage) *sortie.RunPage {
	c := &sortie.RunPage{NextPageToken: p.NextPageToken, Runs: make([]*sortie.Run, len(p.Runs))}
	for i, r := range p.Runs {
		c.Runs[i] = public(r)
	}
	return c
}

// publicPush is a push configuration as the API shows it: without its
// sealed token (ciphertext of an A2A client's secret).
func publicPush(cfg sortie.PushConfig) sortie.PushConfig {
	cfg.SealedToken = nil
	return cfg
}
