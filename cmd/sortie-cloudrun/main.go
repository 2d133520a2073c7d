package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/sortie-run/sortie"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/host/gcphost"
	"github.com/sortie-run/sortie/host/telemetry"
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
	tracing, err := telemetry.StartTracing(context.Background())
	if err != nil {
		log.Error("sortie-cloudrun: tracing", "err", err)
		return 2
	}
	defer tracing.Shutdown()
	c, err := gcphost.OpenContainer(context.Background(), env, builtin.Registry(), log)
	if err != nil {
		log.Error("sortie-cloudrun: start", "err", err)
		var ve *sortie.ValidationError
		if errors.As(err, &ve) {
			return 2
		}
		return 1
	}
	defer c.Close()
	// Cloud Run sends SIGTERM on CancelExecution and at the task timeout.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if env.Mode == fncloudrun.ModeService {
		return serve(ctx, env, c, log)
	}
	if _, err := env.RunJob(ctx, c.Worker, c.ControlPlane); err != nil {
		log.Error("sortie-cloudrun: job", "err", err)
		return 1
	}
	return 0
}

// serve is service mode: on PORT until SIGTERM.
func serve(ctx context.Context, env *fncloudrun.Env, c *gcphost.Container, log *slog.Logger) int {
	svc, err := gcphost.NewService(ctx, env, c, builtin.Agents(), log)
	if err != nil {
		log.Error("sortie-cloudrun: triggers", "err", err)
		return 2
	}
	defer svc.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort("", env.Port))
	if err == nil {
		err = svc.Serve(ctx, ln)
	}
	if err != nil {
		log.Error("sortie-cloudrun: serve", "err", err)
		return 1
	}
	return 0
}
