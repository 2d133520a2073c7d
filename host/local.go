package host

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/launchers/local"
)

// The variables a host passes its worker subprocesses, from which the
// sortie CLI's worker rebuilds the host's Config (besides the
// OpenTelemetry ones).
const (
	// EnvStateDir is Config.StateDir, absolute.
	EnvStateDir = "SORTIE_STATE_DIR"
	// EnvLogLevel is Config.WorkerLogLevel.
	EnvLogLevel = "SORTIE_LOG_LEVEL"
	// EnvRuntimes is Config.Runtimes, absolute.
	EnvRuntimes = "SORTIE_RUNTIMES"
	// EnvConfigEnv is Config.ConfigEnv, comma-separated.
	EnvConfigEnv = "SORTIE_CONFIG_ENV"
	// EnvAllowDestinations is Destinations.Allow, comma-separated ("*":
	// any public host); destination.FromEnv reads the three variables.
	EnvAllowDestinations = destination.EnvAllow
	// EnvAllowDestinationAddrs is Destinations.AllowAddrs, comma-separated
	// CIDR ranges.
	EnvAllowDestinationAddrs = destination.EnvAllowAddrs
	// EnvAllowHTTPDestinations is "1" when Destinations.AllowHTTP is set.
	EnvAllowHTTPDestinations = destination.EnvAllowHTTP
)

// callbackClient sends a worker's callbacks to the host that launched it
// (the URL comes from the host's invocation, never from a request).
var callbackClient = &http.Client{Timeout: 30 * time.Second}

// NewReporter returns the reporter of a local worker's attempt: the one
// inv asks for, writing cp or calling back the host that launched it.
func NewReporter(inv *sortie.Invocation, cp sortie.ControlPlane) (functions.Reporter, error) {
	return functions.NewReporter(inv, cp, "", callbackClient)
}

// localLauncher runs attempts on warm worker processes (the default, see
// warmLauncher), in this process (Config.InProcess) or as one
// Config.WorkerCommand subprocess per attempt (Config.ProcessPerAttempt)
// logging to StateDir/logs.
func (h *Host) localLauncher() (sortie.Launcher, error) {
	switch {
	case h.cfg.InProcess:
		return h.inProcessLauncher()
	case !h.cfg.ProcessPerAttempt:
		return h.warmLauncher()
	}
	command, env, err := h.workerProcess()
	if err != nil {
		return nil, err
	}
	return local.New(&local.Options{Command: command, Env: env, LogDir: filepath.Join(h.dir, LogDir)})
}

// inProcessLauncher runs each attempt in a goroutine of this process.
func (h *Host) inProcessLauncher() (sortie.Launcher, error) {
	w, err := NewWorker(h.cfg)
	if err != nil {
		return nil, err
	}
	h.worker = w
	return local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		rep, err := NewReporter(inv, h.cp)
		if err != nil {
			return err
		}
		_, err = w.Execute(ctx, inv, rep)
		return err
	}})
}

// workerProcess is the command of a worker subprocess (Config.WorkerCommand,
// else this executable's worker) and its environment (see workerEnv).
func (h *Host) workerProcess() (command, env []string, err error) {
	command = h.cfg.WorkerCommand
	if len(command) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, nil, fmt.Errorf("host: find this executable for workers: %w", err)
		}
		command = []string{exe, "worker"}
	}
	env, err = h.workerEnv()
	return command, env, err
}

// workerEnv is the environment of a worker subprocess: local.DefaultEnv
// and the host's Config as the variables the worker reads.
func (h *Host) workerEnv() ([]string, error) {
	env := append(local.DefaultEnv(), EnvStateDir+"="+h.dir, EnvLogLevel+"="+h.cfg.WorkerLogLevel)
	if len(h.cfg.ConfigEnv) > 0 {
		env = append(env, EnvConfigEnv+"="+strings.Join(h.cfg.ConfigEnv, ","))
	}
	env = append(env, h.cfg.Destinations.Env()...)
	env = append(env, h.cfg.Models.Env()...)
	if len(h.cfg.AllowTools) > 0 {
		env = append(env, functions.EnvAllowTools+"="+strings.Join(h.cfg.AllowTools, ","))
	}
	if len(h.cfg.AllowConnections) > 0 {
		env = append(env, functions.EnvAllowConnections+"="+strings.Join(h.cfg.AllowConnections, ","))
	}
	env = append(env, h.cfg.payloadEnv()...)
	env = append(env, h.cfg.Prices.Env()) // budgets are enforced with the host's table
	refsEnv, err := h.cfg.configRefsEnv()
	if err != nil {
		return nil, err
	}
	env = append(env, refsEnv...)
	hooksEnv, err := h.cfg.webhookEnv()
	if err != nil {
		return nil, err
	}
	env = append(env, hooksEnv...)
	env = append(env, otelEnv()...)
	if h.cfg.Runtimes != "" {
		abs, err := filepath.Abs(h.cfg.Runtimes)
		if err != nil {
			return nil, sortie.Invalidf("Runtimes", "%q: %v", h.cfg.Runtimes, err)
		}
		env = append(env, EnvRuntimes+"="+abs)
	}
	return env, nil
}

// NewWorker returns the worker of cfg's local launcher, the one an
// in-process attempt runs on and a worker subprocess (the sortie CLI's
// worker) builds from the same Config: Registry's handlers, Runtimes'
// exec commands (those of the session protocol on pools of warm
// processes, in Warm), the Destinations policy, the ConfigRefs allowlist
// and, with ConfigEnv, inline configuration opened with StateDir's local
// key, which the host created. Close its pools with [CloseWorker].
func NewWorker(cfg Config) (*functions.Worker, error) {
	cfg = cfg.withDefaults()
	w := &functions.Worker{Registry: cfg.Registry, Logger: cfg.Logger, Destinations: cfg.Destinations, Models: cfg.Models}
	w.SetAllowlists(cfg.AllowTools, cfg.AllowConnections)
	hooks, err := cfg.webhookExecutor()
	if err != nil {
		return nil, err
	}
	w.Webhooks = hooks
	if cfg.Runtimes != "" {
		rt, err := functions.LoadExecRuntimes(cfg.Runtimes)
		if err != nil {
			return nil, sortie.Invalidf("Runtimes", "%v", err)
		}
		w.Exec = rt
		if w.Warm, err = functions.NewPools(rt, &functions.PoolOptions{Size: cfg.WorkerPoolSize,
			RecycleAfter: cfg.WorkerRecycleAfter, Logger: cfg.Logger}); err != nil {
			return nil, sortie.Invalidf("Runtimes", "%v", err)
		}
	}
	refs, err := workerConfigRefs(cfg)
	if err != nil {
		return nil, err
	}
	w.ConfigRefs = refs
	if w.Payloads, err = workerPayloads(cfg); err != nil {
		return nil, err
	}
	opener, err := localOpener(cfg)
	if err != nil {
		return nil, err
	}
	if opener != nil {
		w.InlineConfig = &functions.InlineConfig{Opener: opener, Allow: cfg.ConfigEnv}
		w.StepSealer, _ = opener.(functions.StepSealer)
	}
	return w, nil
}
