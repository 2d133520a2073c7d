package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/internal/strictjson"
	"github.com/sortie-run/sortie/launchers/local"
	"github.com/spf13/cobra"
)

// globals are the flags every command takes.
type globals struct {
	stateDir  string
	runtimes  string
	jsonOut   bool
	logLevel  string
	inProcess bool
	reconcile time.Duration
	configEnv []string
	hostURL   string
	tokenFile string
	dest      destinationFlags
	aws       awsFlags
	// command is the command being run, set before validate.
	command *cobra.Command
	// issuer mints callback reports; set by serve --worker-callbacks.
	issuer sortie.ReportIssuer
}

// callbackClient sends a worker's callbacks to the host that launched it
// (the URL comes from the host's invocation, never from a request).
var callbackClient = &http.Client{Timeout: 30 * time.Second}

func (g *globals) register(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&g.stateDir, "state-dir", envOr("SORTIE_STATE_DIR", ".sortie"), "directory of the embedded state (env SORTIE_STATE_DIR); with --dynamodb-table it holds only serve's webhook-keys.json and callback-keys, which in production are mounted secrets")
	f.StringVar(&g.runtimes, "runtimes", os.Getenv("SORTIE_RUNTIMES"), "host allowlist of exec runtimes, a JSON file (env SORTIE_RUNTIMES)")
	f.BoolVar(&g.jsonOut, "json", false, "print JSON: one object a line")
	f.StringVar(&g.logLevel, "log-level", envOr("SORTIE_LOG_LEVEL", "warn"), "log level on stderr: debug, info, warn, error")
	f.BoolVar(&g.inProcess, "in-process", false, "run attempts inside this process instead of a sortie worker subprocess")
	f.DurationVar(&g.reconcile, "reconcile-interval", time.Second, "how often a long-lived command reconciles expired leases")
	f.StringSliceVar(&g.configEnv, "config-env", configEnvDefault(), "turn inline configuration on: the variables it may set, comma-separated (env SORTIE_CONFIG_ENV); off when empty")
	f.StringVar(&g.hostURL, "host", os.Getenv("SORTIE_HOST"), "talk to the sortie serve at this URL instead of the embedded engine (env SORTIE_HOST); its API token comes from SORTIE_TOKEN or --token-file")
	f.StringVar(&g.tokenFile, "token-file", "", "file holding the API token for --host")
	f.StringSliceVar(&g.dest.allow, "allow-destination", envList("SORTIE_ALLOW_DESTINATIONS"), "hosts outbound calls (webhooks, handlers' HTTP client) may reach, e.g. api.example.com or *.example.com; any public host when empty (env SORTIE_ALLOW_DESTINATIONS)")
	f.StringSliceVar(&g.dest.addrs, "allow-destination-addrs", envList("SORTIE_ALLOW_DESTINATION_ADDRS"), "address ranges outbound calls may reach although private, loopback or link-local, e.g. 10.1.0.0/16 (env SORTIE_ALLOW_DESTINATION_ADDRS)")
	f.BoolVar(&g.dest.allowHTTP, "allow-http-destinations", os.Getenv("SORTIE_ALLOW_HTTP_DESTINATIONS") == "1", "allow plain http outbound calls (env SORTIE_ALLOW_HTTP_DESTINATIONS=1)")
	g.aws.register(f)
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

func (g *globals) logger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
		lvl = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}

// host is an embedded engine (SQLite control plane, local launcher), with
// --dynamodb-table an AWS one (DynamoDB control plane, Lambda launcher) or,
// with --host, a remote one (cp and engine nil).
type host struct {
	cp     hostControlPlane
	engine *sortie.Engine
	client *sortie.Client
	agents sortie.Agents
	log    *slog.Logger
}

// hostControlPlane is what a host keeps its runs in: the control plane
// with its push configurations (SQLite or DynamoDB).
type hostControlPlane interface {
	sortie.ControlPlane
	sortie.PushStore
	Close() error
}

func (h *host) Close() {
	if h.engine != nil {
		h.engine.Close()
		h.cp.Close()
	}
}

func (g *globals) absStateDir() (string, error) {
	dir, err := filepath.Abs(g.stateDir)
	if err != nil {
		return "", usagef("--state-dir %q: %v", g.stateDir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o700); err != nil {
		return "", usagef("--state-dir: %v", err)
	}
	return dir, nil
}

// openControlPlane opens the embedded control plane (the worker's, too).
func (g *globals) openControlPlane() (*sqlite.ControlPlane, string, error) {
	if g.aws.table != "" {
		return nil, "", usagef("%s works on the embedded state only; with --dynamodb-table attempts run on the worker Lambda function", g.commandName())
	}
	if err := g.checkStateExists(); err != nil {
		return nil, "", err
	}
	dir, err := g.absStateDir()
	if err != nil {
		return nil, "", err
	}
	cp, err := sqlite.Open(filepath.Join(dir, "sortie.db"), nil)
	if err != nil {
		return nil, "", fmt.Errorf("open state in %s: %w", dir, err)
	}
	return cp, dir, nil
}

func (g *globals) worker(log *slog.Logger) (*functions.Worker, error) {
	dest, err := g.dest.policy()
	if err != nil {
		return nil, err
	}
	w := &functions.Worker{Registry: builtin.Registry(), Logger: log, Destinations: dest}
	if g.runtimes != "" {
		rt, err := functions.LoadExecRuntimes(g.runtimes)
		if err != nil {
			return nil, usagef("--runtimes: %v", err)
		}
		w.Exec = rt
	}
	if err := g.inlineConfig(w); err != nil {
		return nil, err
	}
	return w, nil
}

// openHost opens the embedded engine, the AWS one (--dynamodb-table) or
// the remote one (--host). extra agents are added to the built-ins.
func (g *globals) openHost(extra ...sortie.Manifest) (*host, error) {
	log := g.logger(os.Stderr)
	if g.hostURL != "" {
		return g.openRemote(log)
	}
	agents := builtin.Agents()
	for _, m := range extra {
		agents[m.Name] = m
	}
	if g.aws.table != "" {
		return g.openAWS(log, agents)
	}
	cp, dir, err := g.openControlPlane()
	if err != nil {
		return nil, err
	}
	sealer, err := g.sealer(dir) // before the launcher: it creates the key its worker loads
	if err != nil {
		cp.Close()
		return nil, err
	}
	launcher, err := g.launcher(cp, dir, log)
	if err != nil {
		cp.Close()
		return nil, err
	}
	e := sortie.NewEngine(cp, launcher, agents, &sortie.EngineOptions{Logger: log, Sealer: sealer, ReportIssuer: g.issuer})
	return &host{cp: cp, engine: e, client: sortie.NewClient(e, nil), agents: agents, log: log}, nil
}

func (g *globals) launcher(cp *sqlite.ControlPlane, dir string, log *slog.Logger) (*local.Launcher, error) {
	if g.inProcess {
		w, err := g.worker(log)
		if err != nil {
			return nil, err
		}
		return local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
			rep, err := functions.NewReporter(inv, cp, "", callbackClient)
			if err != nil {
				return err
			}
			_, err = w.Execute(ctx, inv, rep)
			return err
		}})
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the sortie binary for workers: %w", err)
	}
	env := append(local.DefaultEnv(), "SORTIE_STATE_DIR="+dir, "SORTIE_LOG_LEVEL="+g.workerLogLevel())
	env = append(env, g.configEnvVars()...)
	env = append(env, g.dest.env()...)
	env = append(env, otelEnvVars()...)
	if g.runtimes != "" {
		abs, err := filepath.Abs(g.runtimes)
		if err != nil {
			return nil, usagef("--runtimes %q: %v", g.runtimes, err)
		}
		env = append(env, "SORTIE_RUNTIMES="+abs)
	}
	return local.New(&local.Options{Command: []string{exe, "worker"}, Env: env, LogDir: filepath.Join(dir, "logs")})
}

// resolveAgent turns a command-line agent argument into an agent name: a
// directory holding agent.json (the operator's own file) or a known name.
func resolveAgent(arg string) (name string, extra []sortie.Manifest, err error) {
	if !strings.ContainsRune(arg, os.PathSeparator) && !strings.HasPrefix(arg, ".") {
		return arg, nil, nil
	}
	m, err := loadManifest(filepath.Join(arg, "agent.json"))
	if err != nil {
		return "", nil, err
	}
	return m.Name, []sortie.Manifest{m}, nil
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
	if err := m.Validate(); err != nil {
		return sortie.Manifest{}, usagef("agent: %s: %v", path, err)
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
	if g.command == nil || slices.Contains(creatingCommands, g.command.Name()) {
		return nil
	}
	dir, err := filepath.Abs(g.stateDir)
	if err != nil {
		return usagef("--state-dir %q: %v", g.stateDir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sortie.db")); errors.Is(err, fs.ErrNotExist) {
		return usagef("no Sortie state in %s (--state-dir, SORTIE_STATE_DIR; default .sortie of the working directory): run, submit or serve start one", dir)
	}
	return nil
}

// withHost opens the embedded host, runs fn and closes the host.
func (g *globals) withHost(fn func(h *host) error) error {
	h, err := g.openHost()
	if err != nil {
		return err
	}
	defer h.Close()
	return fn(h)
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
	if g.runtimes != "" {
		if _, err := functions.LoadExecRuntimes(g.runtimes); err != nil {
			return usagef("--runtimes: %v", err)
		}
	}
	if _, err := g.dest.policy(); err != nil {
		return err
	}
	if err := g.validateAWS(); err != nil {
		return err
	}
	return g.validateConfigEnv()
}

// workerLogLevel is the level of a worker subprocess's log file: info at
// least, so an exec worker's stderr (logged at info) is kept.
func (g *globals) workerLogLevel() string {
	if g.logLevel == "debug" {
		return "debug"
	}
	return "info"
}

// checkRuntime refuses, before anything is stored, an exec agent whose
// runtime the host's allowlist (--runtimes) does not name: on the embedded
// host the workers share this process's configuration.
func (g *globals) checkRuntime(m sortie.Manifest) error {
	id, ok := strings.CutPrefix(m.Runtime, "exec:")
	if !ok {
		return nil
	}
	if g.runtimes == "" {
		return usagef("agent %s runs %s: pass --runtimes FILE (or SORTIE_RUNTIMES) naming it", m.Name, m.Runtime)
	}
	rt, err := functions.LoadExecRuntimes(g.runtimes)
	if err != nil {
		return usagef("--runtimes: %v", err)
	}
	if _, ok := rt[id]; !ok {
		return usagef("agent %s runs %s, which %s does not name", m.Name, m.Runtime, g.runtimes)
	}
	return nil
}
