package server

import (
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/push"
)

// public is the run as the API shows it: [push.PublicRun], the view
// webhooks get too.
func public(run *sortie.Run) *sortie.Run {
	if run == nil {
		return nil
	}
	return push.PublicRun(run)
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
