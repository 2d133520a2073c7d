package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/launchers/local"
	"github.com/sortie-run/sortie/server"
)

// Serve the API of an embedded engine on a loopback port until the context
// ends, then shut down gracefully.
func ExampleServer_Serve() {
	dir, _ := os.MkdirTemp("", "sortie-example")
	defer os.RemoveAll(dir)
	cp, _ := sqlite.Open(filepath.Join(dir, "sortie.db"), nil)
	defer cp.Close()
	reg := functions.NewRegistry()
	probe.Register(reg)
	w := &functions.Worker{Registry: reg}
	l, _ := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, ""))
		return err
	}})
	engine := sortie.NewEngine(cp, l, sortie.Agents{"probe": {Name: "probe", Runtime: "go:probe"}}, nil)
	defer engine.Close()

	srv, err := server.New(server.Options{Engine: engine, APITokens: []string{"a-long-api-token-0001"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stop()
	fmt.Println(srv.Serve(ctx, ln, 5*time.Second))
	// Output: <nil>
}
