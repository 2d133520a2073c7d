package host

import (
	"gocloud.dev/blob"

	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo/dynamostream"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/host/gcphost"
	"github.com/sortie-run/sortie/inputschema"
	"github.com/sortie-run/sortie/launchers/local"
	"github.com/sortie-run/sortie/server/callback"
)

// The files of a state directory (Config.StateDir).
const (
	// StateFile is the embedded SQLite control plane.
	StateFile = "sortie.db"
	// LogDir holds each local attempt's log, RUN-ATTEMPT.log.
	LogDir = "logs"
	// LocalKeyFile is the local key (crypto/localkey) that seals inline
	// configuration on the embedded host and A2A push tokens on every host.
	LocalKeyFile = "local.key"
	// WebhookKeysFile holds the webhook signing keys:
	// {"primary": ID, "keys": {ID: ["whsec_..."]}}.
	WebhookKeysFile = "webhook-keys.json"
	// CallbackKeysFile holds the worker callback keys, one a line.
	CallbackKeysFile = "callback-keys"
)

// awsPollInterval is how often a client of a host on DynamoDB reads a run
// it follows (each read costs capacity).
const awsPollInterval = 250 * time.Millisecond

// ControlPlane is what a host keeps its runs in (SQLite or DynamoDB),
// closed with the host.
type ControlPlane interface {
	sortie.ControlPlane
	Close() error
}

// Host is a Sortie host: a control plane, an engine launching attempts,
// and with Config.API its server. Build it with [New]; Close it.
type Host struct {
	cfg Config
	dir string
	log *slog.Logger
	cp  ControlPlane
	aws *awshost.Host // on DynamoDB
	// watcher wakes followers of runs other processes change, from the
	// DynamoDB table's stream; nil without one.
	watcher  *dynamostream.Watcher
	gcp      *gcphost.Host // launching on Cloud Run or sealing with Cloud KMS
	engine   *sortie.Engine
	client   *sortie.Client
	keys     *callback.Keyring
	issuer   *callback.Issuer
	api      *api
	worker   *functions.Worker // of the local launcher, with its pools
	local    *local.Launcher   // the warm workers' launcher
	payloads *blob.Bucket      // of the engine's payload store; nil without one
}

// New builds the host of cfg: it opens the control plane (creating
// StateDir's state and keys as needed), the launcher and the engine and,
// with cfg.API, the server, after reading the control plane once so a
// host that cannot reach it fails here. Errors about cfg are
// [*sortie.ValidationError]s naming the field. The caller closes the
// host.
func New(ctx context.Context, cfg Config) (*Host, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, sortie.Invalidf("StateDir", "%q: %v", cfg.StateDir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, LogDir), 0o700); err != nil {
		return nil, sortie.Invalidf("StateDir", "%v", err)
	}
	h := &Host{cfg: cfg, dir: dir, log: cfg.Logger}
	if err := h.openCallbacks(); err != nil {
		return nil, err
	}
	if err := h.openEngine(ctx); err != nil {
		return nil, err
	}
	if cfg.API != nil {
		if err := h.openAPI(ctx); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// openEngine opens the control plane, the sealer and the launcher, and
// the engine over them.
func (h *Host) openEngine(ctx context.Context) error {
	opts := sortie.EngineOptions{Logger: h.log, Pricer: h.cfg.Prices, Models: h.cfg.Models, OwnRunsOnly: h.cfg.OwnRunsOnly,
		Inputs: inputschema.Default}
	if h.issuer != nil {
		opts.ReportIssuer = h.issuer
	}
	refs, err := h.cfg.loadConfigRefs()
	if err != nil {
		return err
	}
	if refs != nil {
		opts.ConfigRefs = refs
	}
	if h.cfg.AWS.Table != "" {
		err = h.openAWS(ctx, &opts)
	} else {
		err = h.openEmbedded(&opts)
	}
	if err != nil {
		return err
	}
	if err := h.openGCP(ctx, &opts); err != nil {
		h.closeParts()
		return err
	}
	if err := h.openPayloads(ctx, &opts); err != nil {
		h.closeParts()
		return err
	}
	l, err := h.launcher()
	if err != nil {
		h.closeParts()
		return err
	}
	if p, ok := h.cp.(interface{ SetPricer(sortie.Pricer) }); ok {
		p.SetPricer(h.cfg.Prices) // budgets are enforced with the host's table
	}
	var agents sortie.AgentCatalog = h.cfg.Agents
	if h.cfg.Catalog != nil {
		agents = h.cfg.Catalog
	}
	h.engine = sortie.NewEngine(h.cp, l, agents, &opts)
	clientOpts := &sortie.ClientOptions{}
	if h.cfg.AWS.Table != "" {
		clientOpts.PollInterval = awsPollInterval
	}
	h.client = sortie.NewClient(h.engine, clientOpts)
	return nil
}

// openEmbedded opens StateDir's SQLite control plane and the local key's
// sealer (before the launcher: it creates the key local workers load).
func (h *Host) openEmbedded(opts *sortie.EngineOptions) error {
	cp, err := OpenState(h.dir)
	if err != nil {
		return err
	}
	h.cp = cp
	if opts.Sealer, err = h.localSealer(); err != nil {
		cp.Close()
		return err
	}
	return nil
}

// openAWS opens the DynamoDB control plane and the KMS keyring's sealer.
func (h *Host) openAWS(ctx context.Context, opts *sortie.EngineOptions) error {
	ah, err := awshost.Open(ctx, h.cfg.AWS)
	if err != nil {
		return prefixAWS(err)
	}
	if h.cfg.API != nil && !ah.SharedPageTokens() {
		ah.Close()
		return sortie.Invalidf("AWS.PageTokenKey", "a host serving an API on DynamoDB needs the deployment's page-token key (%s, or %s: the key sealed by the deployment's KMS key, terraform/aws's page_token_key_sealed), the same in every replica and process, so a page token made by one is taken by the others and after restarts",
			awshost.EnvPageTokenKey, awshost.EnvPageTokenKeySealed)
	}
	h.aws, h.cp = ah, ah.ControlPlane
	if s := ah.Sealer(); s != nil {
		opts.Sealer = s
	}
	return nil
}

// launcher is Config.Launcher, else the Lambda launcher of AWS.Function
// (none without it), else the local launcher.
func (h *Host) launcher() (sortie.Launcher, error) {
	switch {
	case h.cfg.Launcher != nil:
		return h.cfg.Launcher, nil
	case h.gcp != nil && h.gcp.Launcher() != nil:
		return h.gcp.Launcher(), nil
	case h.aws == nil:
		return h.localLauncher()
	case h.cfg.LocalWorkers:
		if h.cfg.ProcessPerAttempt && (h.cfg.API == nil || !h.cfg.API.WorkerCallbacks) {
			return nil, sortie.Invalidf("LocalWorkers", "on AWS.Table a worker process per attempt reports over worker callbacks: serve an API with WorkerCallbacks")
		}
		return h.localLauncher()
	case h.cfg.AWS.Function == "":
		return noLauncher{}, nil
	}
	l, err := h.aws.Launcher()
	if err != nil {
		return nil, prefixAWS(err)
	}
	return l, nil
}

// prefixAWS names an awshost field as a Config field ("AWS.Function").
func prefixAWS(err error) error {
	var ve *sortie.ValidationError
	if errors.As(err, &ve) {
		return sortie.Invalidf("AWS."+ve.Field, "%s", ve.Reason)
	}
	return err
}

// OpenState opens the embedded SQLite control plane of the state
// directory dir ([StateFile]), creating both when missing.
func OpenState(dir string) (*sqlite.ControlPlane, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, sortie.Invalidf("StateDir", "%q: %v", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, sortie.Invalidf("StateDir", "%v", err)
	}
	cp, err := sqlite.Open(filepath.Join(dir, StateFile), nil)
	if errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("the state directory %s is not writable by this user (every command, reads included, opens its database to write): run sortie as the directory's owner, or give another --state-dir: %w", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open state in %s: %w", dir, err)
	}
	return cp, nil
}

// noLauncher is the launcher of a host on DynamoDB without a worker
// function: it reads, cancels and configures runs, and refuses launches.
type noLauncher struct{}

func (noLauncher) Start(context.Context, *sortie.Invocation) (sortie.Ref, error) {
	return sortie.Ref{}, sortie.Invalidf("AWS.Function", "this host has no worker function to launch attempts on")
}

// Engine returns the host's engine.
func (h *Host) Engine() *sortie.Engine { return h.engine }

// Client returns a client of the host's engine (polling DynamoDB every
// 250 ms when the host is on AWS).
func (h *Host) Client() *sortie.Client { return h.client }

// ControlPlane returns the host's control plane.
func (h *Host) ControlPlane() ControlPlane { return h.cp }

// Agents returns the agents the host runs.
func (h *Host) Agents() sortie.Agents { return h.cfg.Agents }

// StateDir returns the absolute path of the host's state directory.
func (h *Host) StateDir() string { return h.dir }

// CallbackURL returns the URL workers send callbacks to, or "" without
// API.WorkerCallbacks.
func (h *Host) CallbackURL() string {
	if h.issuer == nil {
		return ""
	}
	return h.issuer.URL()
}

// RunReconciler retries or fails runs whose lease expired, every
// Config.ReconcileInterval, sweeps orphaned payload objects at once and
// every 10 minutes and, with Config.Retention, deletes expired runs every minute,
// until ctx ends.
func (h *Host) RunReconciler(ctx context.Context) {
	if h.payloads != nil {
		go h.sweepPayloads(ctx)
	}
	if h.cfg.Retention > 0 {
		go h.expireRuns(ctx)
	}
	h.engine.RunReconciler(ctx, h.cfg.ReconcileInterval)
}

// Close closes the engine (waiting for the launches it began) and the
// control plane.
func (h *Host) Close() error {
	if h.engine != nil {
		h.engine.Close()
	}
	if err := h.stopWorkers(); err != nil {
		h.log.Warn("stop the local workers", "err", err)
	}
	return h.closeParts()
}

// closeParts closes the control plane and the GCP clients, those opened.
func (h *Host) closeParts() error {
	var err error
	if h.gcp != nil {
		err = h.gcp.Close()
	}
	if h.payloads != nil {
		err = errors.Join(err, h.payloads.Close())
	}
	if h.cp != nil {
		err = errors.Join(h.cp.Close(), err)
	}
	return err
}
