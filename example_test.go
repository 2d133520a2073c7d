package sortie_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/launchers/local"
)

// An embedded engine: the SQLite control plane, the local launcher running
// attempts in-process, and a client that submits a run and follows it.
func Example() {
	dir, _ := os.MkdirTemp("", "sortie-example")
	defer os.RemoveAll(dir)
	cp, err := sqlite.Open(filepath.Join(dir, "sortie.db"), nil)
	if err != nil {
		panic(err)
	}
	defer cp.Close()

	reg := functions.NewRegistry()
	probe.Register(reg)
	worker := &functions.Worker{Registry: reg}
	launcher, _ := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		_, err := worker.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, "example"))
		return err
	}})
	defer launcher.Close()

	engine := sortie.NewEngine(cp, launcher, sortie.Agents{"probe": {Name: "probe", Runtime: "go:probe"}}, nil)
	defer engine.Close()
	client := sortie.NewClient(engine, nil)

	ctx := context.Background()
	run, err := client.Submit(ctx, &sortie.SubmitRequest{Agent: "probe", IdempotencyKey: "example-1",
		Variables: json.RawMessage(`{"events":2,"output":{"answer":42}}`)})
	if err != nil {
		panic(err)
	}
	for u, err := range client.Follow(ctx, run.ID, sortie.Cursor{}) {
		switch {
		case err != nil:
			panic(err)
		case u.Event != nil:
			fmt.Println("event", u.Event.Cursor(), u.Event.Kind)
		default:
			fmt.Println(u.Run.State, string(u.Run.Result))
		}
	}
	// Output:
	// event 1.1 progress
	// event 1.2 progress
	// completed {"answer":42}
}
