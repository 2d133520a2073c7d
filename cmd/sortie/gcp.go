package main

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/sortie-run/sortie/crypto/keyring"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/host/gcphost"
)

// The Google Cloud host: with --cloudrun-job or --cloudrun-service the
// commands launch attempts on cmd/sortie-cloudrun (deployed by
// terraform/gcp) instead of local workers, with either control plane, and
// with --gcp-kms-keys they seal inline configuration with the Cloud KMS
// keyring the containers open it with. Credentials are Application Default
// Credentials (the VM's or GKE workload's service account).

// gcpFlags are the global flags of the Google Cloud host.
type gcpFlags struct {
	job, service, runEndpoint string
	kmsKeys, kmsEndpoint      string
	keys                      [][2]string
}

func (c *gcpFlags) register(f *pflag.FlagSet) {
	f.StringVar(&c.job, "cloudrun-job", os.Getenv(fncloudrun.EnvJob),
		"launch attempts as executions of this Cloud Run Job, projects/P/locations/R/jobs/J (terraform/gcp's job; env "+fncloudrun.EnvJob+")")
	f.StringVar(&c.service, "cloudrun-service", os.Getenv("SORTIE_CLOUDRUN_SERVICE"),
		"launch attempts by POSTing them to this Cloud Run service URL with an ID token (terraform/gcp's service_url; env SORTIE_CLOUDRUN_SERVICE)")
	f.StringVar(&c.runEndpoint, "cloudrun-endpoint", os.Getenv("SORTIE_CLOUDRUN_ENDPOINT"),
		"Cloud Run Admin API endpoint, host:port; loopback is an emulator's (default: Cloud Run's; env SORTIE_CLOUDRUN_ENDPOINT)")
	f.StringVar(&c.kmsKeys, "gcp-kms-keys", os.Getenv("SORTIE_GCP_KMS_KEYS"),
		"seal inline configuration with this Cloud KMS keyring, ID=projects/P/locations/L/keyRings/R/cryptoKeys/K[,...], primary first, the Cloud Run workers' own (terraform/gcp's kms_keys; env SORTIE_GCP_KMS_KEYS)")
	f.StringVar(&c.kmsEndpoint, "gcp-kms-endpoint", os.Getenv("SORTIE_GCP_KMS_ENDPOINT"),
		"Cloud KMS endpoint, host:port; loopback is an emulator's (default: Cloud KMS; env SORTIE_GCP_KMS_ENDPOINT)")
}

// validateGCP parses the keyring flag.
func (g *globals) validateGCP() error {
	keys, err := keyring.ParseList("--gcp-kms-keys", g.gcp.kmsKeys)
	if err != nil {
		return usagef("%v", err)
	}
	g.gcp.keys = keys
	return nil
}

// config is the host/gcphost configuration of the flags.
func (c *gcpFlags) config() gcphost.Config {
	return gcphost.Config{Job: c.job, Service: c.service, RunEndpoint: c.runEndpoint, KMSKeys: c.keys, KMSEndpoint: c.kmsEndpoint}
}
