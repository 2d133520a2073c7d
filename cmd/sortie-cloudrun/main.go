package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/examples/textstats"
	"github.com/sortie-run/sortie/functions"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/functions/probe"
)

func main() {
	os.Exit(run())
}

// run is the container's entrypoint; it returns the exit status: 0 when
// the attempt's outcome was stored (or the claim refused a duplicate), 1
// when it could not be, 2 for a bad configuration.
func run() int {
	env, err := fncloudrun.LoadEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie-cloudrun:", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: env.LogLevel}))
	reg := functions.NewRegistry()
	probe.Register(reg)
	textstats.Register(reg)
	w := &functions.Worker{Registry: reg, Logger: log}
	cp, err := env.OpenControlPlane(context.Background())
	if err != nil {
		log.Error("sortie-cloudrun: start", "err", err)
		return 1
	}
	defer cp.Close()
	// Cloud Run sends SIGTERM on CancelExecution and at the task timeout.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if env.Mode == fncloudrun.ModeService {
		return serve(ctx, env, w, cp, log)
	}
	if _, err := env.RunJob(ctx, w, cp); err != nil {
		log.Error("sortie-cloudrun: job", "err", err)
		return 1
	}
	return 0
}

// agents are the agents trigger rules may start: the handlers this binary
// registers.
func agents() sortie.Agents {
	return sortie.Agents{
		"textstats": textstats.Manifest,
		"probe":     {Name: "probe", Version: "1", Runtime: "go:probe", Description: "programmable test agent"},
	}
}
