// Command interactive-web is the interactive example of remote execution:
// one page submits the same agent either to the embedded engine or
// through the remote path (a host whose workers are separate processes
// reporting over signed HTTP callbacks), and shows both runs' event
// streams the same way. See README.md.
//
//	go run ./examples/interactive-web [-listen 127.0.0.1:7790] [-state-dir DIR]
//
// With the argument "worker" it is the remote path's worker process: one
// invocation on stdin, reported over the callbacks the invocation names.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		if err := runWorker(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "interactive-web worker:", err)
			os.Exit(1)
		}
		return
	}
	listen := flag.String("listen", "127.0.0.1:7790", "loopback address to serve the page on")
	stateDir := flag.String("state-dir", "", "where both hosts keep their state (default: a new temporary directory)")
	flag.Parse()
	if err := run(*listen, *stateDir); err != nil {
		fmt.Fprintln(os.Stderr, "interactive-web:", err)
		os.Exit(1)
	}
}

func run(listen, stateDir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if stateDir == "" {
		dir, err := os.MkdirTemp("", "sortie-interactive-web-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		stateDir = dir
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	ex, err := start(ctx, ln, stateDir, []string{exe, "worker"})
	if err != nil {
		ln.Close()
		return err
	}
	defer ex.Close()
	fmt.Printf("interactive-web: open http://%s/ (embedded host under /embedded/, remote host under /remote/)\n", ln.Addr())
	srv := &http.Server{Handler: ex, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Shutdown(context.Background()) }()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
