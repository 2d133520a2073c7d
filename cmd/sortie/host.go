package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/inputschema"
	"github.com/sortie-run/sortie/internal/strictjson"
	"github.com/sortie-run/sortie/server/httpengine"
)

// globals are the flags every command takes.
type globals struct {
	stateDir string
	// payloadBucket and payloadLimits are the payload store's.
	payloadBucket string
	payloadLimits sortie.PayloadLimits
	runtimes      string
	jsonOut       bool
	logLevel      string
	inProcess     bool
	// localWorkers is serve --local-workers: local workers on DynamoDB.
	localWorkers bool
	// processPerAttempt, workers, recycle: how local attempts run.
	processPerAttempt bool
	workers           int
	recycle           int
	reconcile         time.Duration
	// retention is --retention as given (a Go duration; "" keeps runs).
	retention string
	configEnv []string
	// configRefs is the configuration references allowlist file.
	configRefs string
	hostURL    string
	tokenFile  string
	dest       destinationFlags
	models     modelFlags
	authz      authorizationFlags
	prices     pricesFlags
	aws        awsFlags
	gcp        gcpFlags
	// command is the command being run, set before validate.
	command *cobra.Command
	// api makes the host a server; set by serve.
	api *host.API
	// agentDirs are serve's --agent directories, read again when their
	// agent.json changes (see liveAgents).
	agentDirs []string
	// envErr is the first host setting read from the environment that is
	// not what it must be (envInt64), refused by validate unless the
	// command talks to --host, which ignores those variables.
	envErr error
}

func (g *globals) register(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&g.stateDir, "state-dir", envOr(host.EnvStateDir, defaultStateDir), "directory of the embedded state (env SORTIE_STATE_DIR); with --dynamodb-table it holds only serve's webhook-keys.json and callback-keys, which in production are mounted secrets")
	f.StringVar(&g.runtimes, "runtimes", os.Getenv(host.EnvRuntimes), "host allowlist of exec runtimes, a JSON file (env SORTIE_RUNTIMES)")
	f.BoolVar(&g.jsonOut, "json", false, "print JSON: one object a line")
	f.StringVar(&g.logLevel, "log-level", envOr(host.EnvLogLevel, "warn"), "log level on stderr: debug, info, warn, error")
	f.BoolVar(&g.inProcess, "in-process", false, "run attempts inside this process instead of on warm sortie worker processes")
	f.BoolVar(&g.processPerAttempt, "process-per-attempt", false, "run each attempt as a sortie worker process of its own that outlives this command (submit, trigger, reconcile --once and resume --no-follow always do)")
	f.IntVar(&g.workers, "workers", functions.DefaultPoolSize, fmt.Sprintf("the most warm worker processes (and local attempts running) at once, 0..%d (0: the default)", functions.MaxPoolSize))
	f.IntVar(&g.recycle, "worker-recycle", 0, "replace a warm worker process after this many attempts (0: never)")
	f.DurationVar(&g.reconcile, "reconcile-interval", time.Second, "how often a long-lived command reconciles expired leases")
	f.StringVar(&g.retention, "retention", os.Getenv(host.EnvRetention), "delete terminal runs (and their payload objects) this long after their last update, e.g. 720h, from serve's and reconcile's reconciler, only those take it (env SORTIE_RETENTION); default: keep runs forever")
	f.StringVar(&g.configRefs, "config-refs", os.Getenv(host.EnvConfigRefs), "host allowlist of configuration references, a JSON file mapping each ID runs may name (--config-ref) to where workers read its value (env SORTIE_CONFIG_REFS)")
	f.StringSliceVar(&g.configEnv, "config-env", envList(host.EnvConfigEnv), "turn inline configuration on: the variables it may set, comma-separated (env SORTIE_CONFIG_ENV); off when empty")
	f.StringVar(&g.hostURL, "host", os.Getenv("SORTIE_HOST"), "talk to the sortie serve at this URL instead of the embedded engine (env SORTIE_HOST); its API token comes from SORTIE_TOKEN or --token-file")
	f.StringVar(&g.tokenFile, "token-file", "", "file holding the API token for --host")
	f.StringVar(&g.payloadBucket, "payload-bucket", os.Getenv(host.EnvPayloadBucket), "bucket URL keeping variables and results over their inline limits, e.g. s3://BUCKET?region=eu-west-1 (env SORTIE_PAYLOAD_BUCKET); default: payloads/ in --state-dir")
	f.Int64Var(&g.payloadLimits.MaxPayloadBytes, "max-payload-bytes", g.envInt64(host.EnvMaxPayloadBytes, "max-payload-bytes"), "largest variables object or result kept by reference, in bytes (env SORTIE_MAX_PAYLOAD_BYTES; 0: 100 MiB)")
	f.Int64Var(&g.payloadLimits.MaxRunBytes, "max-run-payload-bytes", g.envInt64(host.EnvMaxRunPayloadBytes, "max-run-payload-bytes"), "most bytes one run keeps by reference, all its payloads together (env SORTIE_MAX_RUN_PAYLOAD_BYTES; 0: 256 MiB)")
	g.dest.register(f)
	g.models.register(f)
	g.authz.register(f)
	g.prices.register(f)
	g.aws.register(f)
	g.gcp.register(f)
	// The AWS host opens differently for commands that launch attempts:
	// remember which command runs.
	pre := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		g.command = cmd
		if pre == nil {
			return nil
		}
		return pre(cmd, args)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// envInt64 is the integer in variable k, the default of --flag; 0 when
// unset. A value that is not an integer is 0 here and recorded in
// g.envErr, naming k and flag (Config.Validate refuses a negative one).
func (g *globals) envInt64(k, flag string) int64 {
	v := os.Getenv(k)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil && g.envErr == nil {
		g.envErr = usagef("%s %.40q (the default of --%s): not an integer number of bytes", k, v, flag)
	}
	return n
}

// envList splits a comma-separated variable, skipping blank items.
func envList(k string) []string {
	var out []string
	for _, s := range strings.Split(os.Getenv(k), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (g *globals) logger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
		lvl = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}

// target is what a command talks to: the host this process runs (the
// embedded one, or with --dynamodb-table the AWS one) or, with --host, a
// remote one (h nil).
type target struct {
	h      *host.Host
	remote *httpengine.Engine // with --host
	// engine is h's engine or remote.
	engine engine
	client *sortie.Client
	log    *slog.Logger
}

// engine is what the commands call: *sortie.Engine or
// *httpengine.Engine.
type engine interface {
	sortie.ExecutionEngine
	triggers.Submitter
}

func (t *target) Close() {
	if t.h != nil {
		t.h.Close()
	}
}

// config is the host configuration of the flags; extra agents are added
// to the built-ins.
func (g *globals) config(extra ...sortie.Manifest) (host.Config, error) {
	policy, err := g.dest.policy()
	if err != nil {
		return host.Config{}, err
	}
	prices, err := g.prices.table()
	if err != nil {
		return host.Config{}, err
	}
	models, err := g.models.policy()
	if err != nil {
		return host.Config{}, err
	}
	var retention time.Duration
	if g.usesRetention() {
		if retention, err = g.retentionFlag(); err != nil {
			return host.Config{}, err
		}
	}
	limits := g.payloadLimits
	limits.MaxPayloadSetting = "--max-payload-bytes, env " + host.EnvMaxPayloadBytes
	limits.MaxRunSetting = "--max-run-payload-bytes, env " + host.EnvMaxRunPayloadBytes
	cfg := host.Config{Retention: retention, Models: models, AllowTools: g.authz.tools, AllowConnections: g.authz.connections,
		WebhookSteps: g.authz.webhooks, WebhookStepSecretFile: g.authz.secretFile, StateDir: g.stateDir, AWS: g.aws.config(), GCP: g.gcp.config(), Runtimes: g.runtimes, ConfigRefs: g.configRefs, InProcess: g.inProcess,
		LocalWorkers:   g.localWorkers,
		WorkerLogLevel: g.workerLogLevel(), ConfigEnv: g.configEnv, Destinations: policy, ReconcileInterval: g.reconcile,
		Prices: prices, API: g.api, Logger: g.logger(os.Stderr), WorkerPoolSize: g.workers, WorkerRecycleAfter: g.recycle,
		ProcessPerAttempt: g.processPerAttempt || (!g.inProcess && g.outlivedByAttempts()),
		OwnRunsOnly:       g.followsOneRun(),
		PayloadBucket:     g.payloadBucket, PayloadLimits: limits}
	if len(extra) > 0 {
		cfg.Agents = builtin.Agents()
		for _, m := range extra {
			cfg.Agents[m.Name] = m
		}
	}
	if len(g.agentDirs) == len(extra) && len(extra) > 0 {
		cfg.Catalog = newLiveAgents(cfg.Agents, g.agentDirs, extra, cfg.Logger)
	}
	return cfg, nil
}

// openHost opens the embedded host, the AWS one (--dynamodb-table) or
// the remote one (--host). extra agents are added to the built-ins.
func (g *globals) openHost(extra ...sortie.Manifest) (*target, error) {
	if g.hostURL != "" {
		return g.openRemote(g.logger(os.Stderr))
	}
	if err := g.checkAWSCommand(); err != nil {
		return nil, err
	}
	if err := g.checkStateExists(); err != nil {
		return nil, err
	}
	cfg, err := g.config(extra...)
	if err != nil {
		return nil, err
	}
	h, err := host.New(context.Background(), cfg)
	if err != nil {
		return nil, flagError(err)
	}
	return &target{h: h, engine: h.Engine(), client: h.Client(), log: cfg.Logger}, nil
}

// outlivedByAttempts reports whether the command ends while the attempts
// it launches go on (submit, trigger, reconcile --once): those run each
// attempt as a worker process of its own, which outlives the command,
// instead of on warm workers, which stop with it.
func (g *globals) outlivedByAttempts() bool {
	if g.command == nil {
		return false
	}
	switch g.command.Name() {
	case "submit", "trigger":
		return true
	case "reconcile":
		once, _ := g.command.Flags().GetBool("once")
		return once
	case "resume":
		// The next attempt goes on after resume --no-follow returns.
		noFollow, _ := g.command.Flags().GetBool("no-follow")
		return noFollow
	}
	return false
}

// followsOneRun reports whether the command lives only as long as one run
// it submits or follows (run, follow, resume): its host must not launch
// other runs on warm workers that end with it.
func (g *globals) followsOneRun() bool {
	if g.command == nil {
		return false
	}
	switch g.command.Name() {
	case "run", "follow":
		return true
	case "resume":
		return !g.outlivedByAttempts()
	}
	return false
}

// withHost opens the host, runs fn and closes the host.
func (g *globals) withHost(fn func(t *target) error) error {
	t, err := g.openHost()
	if err != nil {
		return err
	}
	defer t.Close()
	return fn(t)
}

// validate checks the global flags before any command runs.
func (g *globals) validate() error {
	if strings.TrimSpace(g.stateDir) == "" {
		return usagef("--state-dir: empty; name a directory (default .sortie)")
	}
	if g.reconcile <= 0 {
		return usagef("--reconcile-interval %v: must be positive", g.reconcile)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", g.logLevel)
	}
	if err := g.validateAWS(); err != nil {
		return err
	}
	if err := g.validateGCP(); err != nil {
		return err
	}
	if err := g.checkHostOnly(); err != nil {
		return err
	}
	if g.envErr != nil && g.hostURL == "" {
		return g.envErr
	}
	cfg, err := g.config()
	if err != nil {
		return err
	}
	return flagError(cfg.Validate())
}

// workerLogLevel is the level of a worker subprocess's log file: info at
// least, so an exec worker's stderr (logged at info) is kept.
func (g *globals) workerLogLevel() string {
	if g.logLevel == "debug" {
		return "debug"
	}
	return "info"
}

// flagNames are the flags (or settings) of the host.Config fields, as
// pairs for a strings.Replacer.
// defaultStateDir is --state-dir's default, relative to the working
// directory.
const defaultStateDir = ".sortie"

var flagNames = []string{
	"StateDir", "--state-dir",
	"AWS.Table", "--dynamodb-table",
	"AWS.Function", "--lambda-function",
	"AWS.KMSKeys", "--kms-keys",
	"GCP.Job", "--cloudrun-job",
	"GCP.Service", "--cloudrun-service",
	"GCP.KMSKeys", "--gcp-kms-keys",
	"Runtimes", "--runtimes",
	"ConfigRefs", "--config-refs",
	"WebhookStepSecretFile", "--webhook-step-secret-file",
	"InProcess", "--in-process",
	"ProcessPerAttempt", "--process-per-attempt",
	"WorkerPoolSize", "--workers",
	"WorkerRecycleAfter", "--worker-recycle",
	"WorkerLogLevel", "--log-level",
	"ConfigEnv", "--config-env",
	"Destinations", "destination policy",
	"ReconcileInterval", "--reconcile-interval",
	"Retention", "--retention",
	"PayloadBucket", "--payload-bucket",
	"payload_bucket", "--payload-bucket",
	"PayloadLimits.MaxPayloadBytes", "--max-payload-bytes",
	"PayloadLimits.MaxRunBytes", "--max-run-payload-bytes",
	"API.Tokens", "API tokens (SORTIE_API_TOKENS or --api-tokens-file)",
	"API.AnyClient", "--insecure-no-auth",
	"API.PublicURL", "--public-url",
	"API.CallbackURL", "--public-url",
	"API.WorkerCallbacks", "--worker-callbacks",
	"API.InsecureHTTPCallbacks", "--insecure-http-callbacks",
}

var flagReplacer = strings.NewReplacer(flagNames...)

// flagError turns the host's error about a Config field into a usage error
// naming the flag (exit status 2); other errors pass as they are.
func flagError(err error) error {
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	for i := 0; i < len(flagNames); i += 2 {
		if ve.Field == flagNames[i] {
			return usagef("%s: %s", flagNames[i+1], flagReplacer.Replace(ve.Reason))
		}
	}
	return err
}

// resolveAgent turns a command-line agent argument into an agent name: a
// directory holding agent.json (the operator's own file) or a known name.
func resolveAgent(arg string) (name string, extra []sortie.Manifest, err error) {
	if !strings.ContainsRune(arg, os.PathSeparator) && !strings.HasPrefix(arg, ".") {
		// A bare name is a built-in agent, else a directory here that
		// holds agent.json ("echo" for ./echo).
		if _, builtIn := builtin.Agents()[arg]; builtIn || !fileExists(filepath.Join(arg, "agent.json")) {
			return arg, nil, nil
		}
	}
	m, err := loadManifest(filepath.Join(arg, "agent.json"))
	if err != nil {
		return "", nil, err
	}
	return m.Name, []sortie.Manifest{m}, nil
}

// fileExists reports whether path names a regular file.
func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// loadManifest reads an agent manifest file the operator named on the
// command line.
func loadManifest(path string) (sortie.Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return sortie.Manifest{}, usagef("agent: %v (an agent directory holds agent.json)", err)
	}
	var m sortie.Manifest
	if err := strictjson.Unmarshal(b, &m); err != nil {
		return sortie.Manifest{}, usagef("agent: %s: %v", path, err)
	}
	// Check validates m and compiles its input schema (kept for the
	// engine's submit checks).
	if err := inputschema.Default.Check(&m); err != nil {
		return sortie.Manifest{}, usagef("agent: %s: %w", path, err)
	}
	return m, nil
}

// creatingCommands are the commands that may start the embedded state in
// a new directory; the others (get, list, follow, cancel, ...) refuse a
// directory without one instead of showing an empty store.
var creatingCommands = []string{"run", "submit", "serve", "trigger", "worker"}

// checkStateExists refuses a read of embedded state that does not exist
// (a typo in --state-dir, or the wrong working directory).
func (g *globals) checkStateExists() error {
	if g.aws.table != "" || g.command == nil || slices.Contains(creatingCommands, g.command.Name()) {
		return nil
	}
	dir, err := filepath.Abs(g.stateDir)
	if err != nil {
		return usagef("--state-dir %q: %v", g.stateDir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, host.StateFile)); errors.Is(err, fs.ErrNotExist) {
		return usagef("no Sortie state in %s (--state-dir, SORTIE_STATE_DIR; default .sortie of the working directory): run, submit or serve start one", dir)
	}
	return nil
}
