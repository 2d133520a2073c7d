package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/launchers/local"
)

// In in-process mode each attempt runs the worker runtime in a goroutine of
// this process, reporting straight to the control plane.
func Example_inProcess() {
	ctx := context.Background()
	cp := memory.New()
	defer cp.Close()
	reg := functions.NewRegistry()
	probe.Register(reg)
	worker := &functions.Worker{Registry: reg, Logger: slog.New(slog.DiscardHandler)}

	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		_, err := worker.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, "example"))
		return err
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Shutdown(ctx)

	agents := sortie.Agents{"probe": {Name: "probe", Version: "1", Runtime: "go:probe"}}
	engine := sortie.NewEngine(cp, l, agents, nil)
	defer engine.Close()
	client := sortie.NewClient(engine, nil)

	run, err := client.Submit(ctx, &sortie.SubmitRequest{Agent: "probe",
		Variables: json.RawMessage(`{"events": 2, "output": "hello"}`)})
	if err != nil {
		log.Fatal(err)
	}
	for u, err := range client.Follow(ctx, run.ID, sortie.Cursor{}) {
		switch {
		case err != nil:
			log.Fatal(err)
		case u.Event != nil:
			fmt.Printf("event %d.%d %s: %s\n", u.Event.Attempt, u.Event.Seq, u.Event.Kind, u.Event.Text)
		default:
			fmt.Println(u.Run.State, string(u.Run.Result))
		}
	}
	// Output:
	// event 1.1 progress: event 1 of 2
	// event 1.2 progress: event 2 of 2
	// completed "hello"
}

// In subprocess mode (the default) each attempt runs `sortie worker` once,
// with an explicit environment: here the state directory its control plane
// lives in, and nothing of the host's but PATH.
func Example_subprocess() {
	l, err := local.New(&local.Options{
		Command: []string{"/usr/local/bin/sortie", "worker"},
		Env:     []string{"PATH=" + os.Getenv("PATH"), "SORTIE_STATE_DIR=/var/lib/sortie"},
		LogDir:  "/var/lib/sortie/logs",
		Grace:   10 * time.Second,
	})
	if err != nil {
		log.Print(err) // here: no sortie binary at that path
		return
	}
	defer l.Close() // workers outlive Close; l.Shutdown stops them
	// Hand l to sortie.NewEngine with the control plane in /var/lib/sortie.
}
