package host

import (
	"context"
	"errors"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host/gcphost"
)

// validateGCP checks the GCP fields and what they exclude.
func (c *Config) validateGCP() error {
	g := &c.GCP
	switch {
	case g.Launches() && c.AWS.Function != "":
		return sortie.Invalidf("GCP.Job", "launch on Cloud Run or on AWS.Function, not both")
	case g.Launches() && c.InProcess:
		return sortie.Invalidf("InProcess", "runs attempts in this process; with GCP.Job or GCP.Service they run on Cloud Run")
	case g.Launches() && c.Launcher != nil:
		return sortie.Invalidf("GCP.Job", "Launcher is set too: choose one launcher")
	case len(g.KMSKeys) > 0 && len(c.AWS.KMSKeys) > 0:
		return sortie.Invalidf("GCP.KMSKeys", "seal with AWS.KMSKeys or GCP.KMSKeys, not both: the workers hold one keyring")
	}
	return prefixGCP(g.Validate())
}

// openGCP opens the GCP keyring and launcher when the Config names them,
// making the keyring the engine's sealer.
func (h *Host) openGCP(ctx context.Context, opts *sortie.EngineOptions) error {
	if !h.cfg.GCP.Launches() && len(h.cfg.GCP.KMSKeys) == 0 {
		return nil
	}
	g, err := gcphost.Open(ctx, h.cfg.GCP)
	if err != nil {
		return prefixGCP(err)
	}
	h.gcp = g
	if s := g.Sealer(); s != nil {
		opts.Sealer = s
	}
	return nil
}

// prefixGCP names a gcphost field as a Config field ("GCP.Job").
func prefixGCP(err error) error {
	var ve *sortie.ValidationError
	if errors.As(err, &ve) {
		return sortie.Invalidf("GCP."+ve.Field, "%s", ve.Reason)
	}
	return err
}
