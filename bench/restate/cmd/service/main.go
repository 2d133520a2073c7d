package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	restate "github.com/restatedev/sdk-go"
	"github.com/restatedev/sdk-go/server"
)

// Input is the invocation's input, the same variables the Sortie benchmark
// submits to the probe agent ({"events":0}); it is not used.
type Input struct {
	Events int `json:"events"`
}

// Result is the invocation's result.
type Result struct {
	OK bool `json:"ok"`
}

// run is the handler: one durable step that returns a constant.
func run(ctx restate.Context, _ Input) (Result, error) {
	return restate.Run(ctx, func(restate.RunContext) (Result, error) {
		return Result{OK: true}, nil
	}, restate.WithName("noop"))
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9080", "loopback host:port to serve the Restate endpoint on")
	flag.Parse()
	if err := serve(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "service:", err)
		os.Exit(1)
	}
}

func serve(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-addr %q: host must be a loopback IP", addr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Warnings only: per-invocation info logs would cost the handler time.
	logs := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})
	srv := server.NewRestate().WithLogger(logs, true).
		Bind(restate.NewService("Bench").Handler("Run", restate.NewServiceHandler(run)))
	return srv.Start(ctx, addr)
}
