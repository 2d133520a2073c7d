package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
)

// A run's life on the SQLite control plane: open the file, reserve, record
// the launch, claim it as the worker, finish, and read it back from a
// second handle on the same file, as another process would.
func Example() {
	dir, err := os.MkdirTemp("", "sortie-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sortie.db")
	ctx := context.Background()
	cp, err := sqlite.Open(path, nil) // WAL, synchronous=FULL
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()

	now := time.Now()
	run := &sortie.Run{
		ID:        sortie.NewRunID(now),
		Agent:     sortie.Manifest{Name: "textstats", Runtime: "go:textstats"},
		Variables: json.RawMessage(`{}`),
	}
	run, _, err = cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: now.UnixMilli()})
	if err != nil {
		log.Fatal(err)
	}
	launchID := sortie.NewLaunchID()
	if _, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: launchID, NowMs: now.UnixMilli()}); err != nil {
		log.Fatal(err)
	}
	if _, err := cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: launchID, Owner: "example", NowMs: now.UnixMilli()}); err != nil {
		log.Fatal(err)
	}
	if _, err := cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: launchID,
		Outcome: sortie.Outcome{Result: json.RawMessage(`{"words":42}`)}, NowMs: now.UnixMilli()}); err != nil {
		log.Fatal(err)
	}

	other, err := sqlite.Open(path, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close()
	got, err := other.Get(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.State, string(got.Result))
	// Output: completed {"words":42}
}
