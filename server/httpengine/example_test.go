package httpengine_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/launchers/local"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/server/httpengine"
)

// A host serves its engine over HTTP; a client elsewhere submits and
// follows a run through the HTTP transport exactly as on the engine.
func Example() {
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
	srv, _ := server.New(server.Options{Engine: engine, Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv)
	defer ts.Close()

	remote, err := httpengine.New(ts.URL, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	client := sortie.NewClient(remote, nil)
	ctx := context.Background()
	run, err := client.Submit(ctx, &sortie.SubmitRequest{Agent: "probe", Variables: []byte(`{"events": 2, "output": "done"}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for u, err := range client.Follow(ctx, run.ID, sortie.Cursor{}) {
		switch {
		case err != nil:
			fmt.Println(err)
		case u.Event != nil:
			fmt.Println(u.Event.Cursor(), u.Event.Kind)
		default:
			fmt.Println(u.Run.State, string(u.Run.Result))
		}
	}
	// Output:
	// 1.1 progress
	// 1.2 progress
	// completed "done"
}
