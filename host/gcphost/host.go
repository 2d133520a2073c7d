package gcphost

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"google.golang.org/api/idtoken"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/launchers/cloudrun"
)

// Config names the Google Cloud parts of a host that launches attempts on
// Cloud Run (package host, sortie serve). Errors about a field name it as
// written here ("Job", "KMSKeys").
type Config struct {
	// Job launches attempts as executions of this Cloud Run Job,
	// "projects/PROJECT/locations/REGION/jobs/JOB" (terraform/gcp's job).
	// Optional; not with Service.
	Job string
	// Service launches attempts by POSTing them to this Cloud Run service
	// URL, with an ID token of the host's service account for it
	// (terraform/gcp's service_url). Optional; not with Job.
	Service string
	// RunEndpoint overrides the Cloud Run Admin API endpoint, host:port; a
	// loopback address is an emulator's (plaintext, no credentials).
	// Optional; defaults to Cloud Run's.
	RunEndpoint string
	// KMSKeys is the keyring that seals inline configuration: (key ID,
	// Cloud KMS key name) pairs, the primary first, the same the workers
	// open it with (their SORTIE_KMS_KEYS; terraform/gcp's kms_keys).
	// Optional; without keys [Host.Sealer] is nil.
	KMSKeys [][2]string
	// KMSEndpoint overrides the Cloud KMS endpoint, likewise. Optional.
	KMSEndpoint string
}

// Launches reports whether c launches attempts (Job or Service is set).
func (c *Config) Launches() bool { return c.Job != "" || c.Service != "" }

// Validate checks c without opening anything; errors are
// [*sortie.ValidationError]s naming the field.
func (c *Config) Validate() error {
	if c.Job != "" && c.Service != "" {
		return sortie.Invalidf("Service", "launch on a Job or a service, not both")
	}
	if c.Service != "" {
		if u, err := url.Parse(c.Service); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return sortie.Invalidf("Service", "%.200q must be the service's absolute https URL", sortie.SafeURL(c.Service))
		}
	}
	return nil
}

// Host is the opened Google Cloud parts of a [Config].
type Host struct {
	keyring  *Keyring
	launcher sortie.Launcher
	closeRun func()
}

// Open opens cfg's keyring and launcher (credentials the client
// libraries' usual way: Application Default Credentials, the workload's
// service account on GKE or a VM). It makes no call to Cloud KMS or Cloud
// Run. The caller closes the host.
func Open(ctx context.Context, cfg Config) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ring, err := OpenKeyring(ctx, cfg.KMSKeys, cfg.KMSEndpoint)
	if err != nil {
		var ve *sortie.ValidationError
		if errors.As(err, &ve) {
			return nil, sortie.Invalidf("KMSKeys", "%v", err)
		}
		return nil, err
	}
	h := &Host{keyring: ring, closeRun: func() {}}
	switch {
	case cfg.Job != "":
		h.launcher, h.closeRun, err = openJobs(ctx, cfg.Job, cfg.RunEndpoint)
		err = fieldError("Job", err)
	case cfg.Service != "":
		h.launcher, err = openService(ctx, cfg.Service)
	}
	if err != nil {
		ring.Close()
		return nil, err
	}
	return h, nil
}

// openService is the service launcher of url, its requests carrying ID
// tokens of the host's service account for url.
func openService(ctx context.Context, url string) (*cloudrun.ServiceLauncher, error) {
	client, err := idtoken.NewClient(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("gcphost: Service: ID token client for %s: %w", sortie.SafeURL(url), err)
	}
	l, err := cloudrun.NewService(cloudrun.ServiceOptions{URL: url, Client: client})
	return l, fieldError("Service", err)
}

// fieldError names field in a [*sortie.ValidationError].
func fieldError(field string, err error) error {
	var ve *sortie.ValidationError
	if errors.As(err, &ve) {
		return sortie.Invalidf(field, "%s", ve.Reason)
	}
	return err
}

// Sealer returns the keyring's configuration sealer (the engine's
// [sortie.EngineOptions.Sealer]), or nil without KMSKeys.
func (h *Host) Sealer() *envelope.Config {
	if h.keyring == nil {
		return nil
	}
	return h.keyring.Config
}

// Launcher returns the Job or service launcher, or nil when the Config
// names neither.
func (h *Host) Launcher() sortie.Launcher { return h.launcher }

// Close closes the Cloud Run and Cloud KMS clients.
func (h *Host) Close() error {
	h.closeRun()
	return h.keyring.Close()
}
