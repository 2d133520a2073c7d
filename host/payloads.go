package host

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"gocloud.dev/blob"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/payload"
	"github.com/sortie-run/sortie/payload/sealed"
)

// PayloadDir holds the embedded payload store in the state directory
// (fileblob): runs/RUN_ID/NAME, each object sealed with [LocalKeyFile].
const PayloadDir = "payloads"

// The variables a host passes its worker subprocesses for their payload
// store.
const (
	// EnvPayloadBucket is Config.PayloadBucket (the Lambda reconciler
	// and trigger functions' variable too).
	EnvPayloadBucket = fnlambda.EnvPayloadBucket
	// EnvMaxPayloadBytes is Config.PayloadLimits.MaxPayloadBytes.
	EnvMaxPayloadBytes = fnlambda.EnvMaxPayloadBytes
	// EnvMaxRunPayloadBytes is Config.PayloadLimits.MaxRunBytes.
	EnvMaxRunPayloadBytes = "SORTIE_MAX_RUN_PAYLOAD_BYTES"
)

// localWorkers reports whether cfg's attempts run on local workers, the
// only ones that read the host's payload store (and write logs in
// StateDir/logs).
func (c *Config) localWorkers() bool {
	return c.Launcher == nil && c.GCP.Job == "" && c.GCP.Service == "" && (c.AWS.Table == "" || c.LocalWorkers)
}

// openPayloads opens the host's payload store for the engine. When its
// attempts run on local workers: PayloadBucket, else StateDir/payloads,
// sealing with the state directory's local key (created on first use);
// deleting a run's objects deletes its attempts' logs too (withLogs).
// When they run on the Lambda worker function or Cloud Run: see
// openGranted. Other hosts have none: their workers could not read it.
func (h *Host) openPayloads(ctx context.Context, opts *sortie.EngineOptions) error {
	if !h.cfg.localWorkers() {
		return h.openGranted(ctx, opts)
	}
	s, b, err := openPayloadStore(ctx, h.cfg, h.dir)
	if err != nil {
		return err
	}
	h.payloads, opts.Payloads = b, withLogs{s, filepath.Join(h.dir, LogDir)}
	return nil
}

// grantsPayloadURLs reports whether cfg's attempts run on workers that
// read and write payloads through the presigned URLs of their
// invocations: the Lambda worker function, the Cloud Run Job or service.
func (c *Config) grantsPayloadURLs() bool {
	return c.Launcher == nil && !c.LocalWorkers && (c.AWS.Function != "" || c.GCP.Launches())
}

// openGranted opens the payload store of a host whose workers reach it
// only through presigned URLs (grantsPayloadURLs), when it has
// PayloadBucket and the KMS keyring its workers hold (AWS.KMSKeys or
// GCP.KMSKeys, the engine's Sealer): objects are sealed with that
// keyring, and each attempt is granted its URLs sealed into its
// invocation (payload.Granter). Without either the host keeps no
// payloads, and a submission over the inline limit is refused naming it.
func (h *Host) openGranted(ctx context.Context, opts *sortie.EngineOptions) error {
	kr, ok := opts.Sealer.(*envelope.Config)
	if !h.cfg.grantsPayloadURLs() || h.cfg.PayloadBucket == "" || !ok {
		return nil
	}
	s, b, err := payload.OpenURL(ctx, h.cfg.PayloadBucket, kr, &payload.Options{Limits: h.cfg.PayloadLimits})
	if err != nil {
		return err
	}
	h.payloads, opts.Payloads, opts.Sealer = b, s, payload.NewGranter(s, kr)
	return nil
}

// workerPayloads is a local worker's payload store, its host's.
func workerPayloads(cfg Config) (*payload.Store, error) {
	dir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, sortie.Invalidf("StateDir", "%q: %v", cfg.StateDir, err)
	}
	s, _, err := openPayloadStore(context.Background(), cfg, dir) // open for the worker's life
	return s, err
}

func openPayloadStore(ctx context.Context, cfg Config, dir string) (*payload.Store, *blob.Bucket, error) {
	sealer := &keySealer{path: filepath.Join(dir, LocalKeyFile)}
	opts := &payload.Options{Limits: cfg.PayloadLimits}
	if cfg.PayloadBucket != "" {
		return payload.OpenURL(ctx, cfg.PayloadBucket, sealer, opts)
	}
	return payload.OpenFile(filepath.Join(dir, PayloadDir), sealer, opts)
}

// keySealer seals payloads with the state directory's local key, loaded
// (or created) on first use: a host that never keeps a payload writes no
// key.
type keySealer struct {
	path string
	once sync.Once
	c    *envelope.Config
	err  error
}

var _ payload.Sealer = (*keySealer)(nil)

func (k *keySealer) config() (*envelope.Config, error) {
	k.once.Do(func() {
		kek, _, err := localkey.LoadOrCreate(k.path)
		if err != nil {
			k.err = fmt.Errorf("payload store: %w", err)
			return
		}
		k.c, k.err = localConfig(kek)
	})
	return k.c, k.err
}

// SealPayload implements [payload.Sealer].
func (k *keySealer) SealPayload(ctx context.Context, run sortie.RunID, agent, key string, value []byte) ([]byte, error) {
	c, err := k.config()
	if err != nil {
		return nil, err
	}
	return c.SealPayload(ctx, run, agent, key, value)
}

// OpenPayload implements [payload.Sealer].
func (k *keySealer) OpenPayload(ctx context.Context, run sortie.RunID, agent, key string, sealed []byte) ([]byte, error) {
	c, err := k.config()
	if err != nil {
		return nil, err
	}
	return c.OpenPayload(ctx, run, agent, key, sealed)
}

// payloadEnv is the payload store's part of a worker subprocess's
// environment.
func (c *Config) payloadEnv() []string {
	var env []string
	if c.PayloadBucket != "" {
		env = append(env, EnvPayloadBucket+"="+c.PayloadBucket)
	}
	if n := c.PayloadLimits.MaxPayloadBytes; n != 0 {
		env = append(env, EnvMaxPayloadBytes+"="+strconv.FormatInt(n, 10))
	}
	if n := c.PayloadLimits.MaxRunBytes; n != 0 {
		env = append(env, EnvMaxRunPayloadBytes+"="+strconv.FormatInt(n, 10))
	}
	return env
}

// validatePayloads checks the payload fields of c.
func (c *Config) validatePayloads() error {
	l := c.PayloadLimits
	switch {
	case l.MaxPayloadBytes < 0 || l.MaxPayloadBytes > payloadCeiling:
		return sortie.Invalidf("PayloadLimits.MaxPayloadBytes", "%d outside 0..%d", l.MaxPayloadBytes, payloadCeiling)
	case l.MaxRunBytes < 0 || l.MaxRunBytes > 16*payloadCeiling:
		return sortie.Invalidf("PayloadLimits.MaxRunBytes", "%d outside 0..%d", l.MaxRunBytes, 16*payloadCeiling)
	}
	if l.MaxRunBytes != 0 && l.MaxRunBytes < l.MaxPayloadBytes {
		return sortie.Invalidf("PayloadLimits.MaxRunBytes", "%d is below PayloadLimits.MaxPayloadBytes %d: one run's payloads together must be allowed one payload",
			l.MaxRunBytes, l.MaxPayloadBytes)
	}
	return nil
}

// payloadCeiling is the largest per-payload limit a host takes.
const payloadCeiling = sealed.MaxPayloadBytes

// Payload sweeps: once at start, then every payloadSweepInterval, the
// objects of runs older than payloadSweepMinAge that the control plane
// does not hold go.
const (
	payloadSweepInterval = 10 * time.Minute
	payloadSweepMinAge   = time.Hour
)

// sweepPayloads sweeps the payload store at once (a host that runs less
// than an interval still sweeps), then every interval until ctx ends.
func (h *Host) sweepPayloads(ctx context.Context) {
	t := time.NewTicker(payloadSweepInterval)
	defer t.Stop()
	for {
		if n, err := h.engine.SweepPayloads(ctx, payloadSweepMinAge); err != nil && ctx.Err() == nil {
			h.log.Warn("payload sweep", "err", err)
		} else if n > 0 {
			h.log.Info("payload sweep: deleted the objects of runs the control plane does not hold", "runs", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
