package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
)

// A run's life on the in-memory control plane: reserve, record the launch,
// claim it as the worker, report an event and finish.
func Example() {
	ctx := context.Background()
	cp := memory.New()
	defer cp.Close()

	now := time.Now()
	run := &sortie.Run{
		ID:        sortie.NewRunID(now),
		Agent:     sortie.Manifest{Name: "textstats", Runtime: "go:textstats"},
		Variables: json.RawMessage(`{}`),
	}
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: now.UnixMilli()})
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
	evs, err := cp.AppendEvents(ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: launchID,
		Events: []sortie.Event{{Kind: "progress", Text: "counting words"}}})
	if err != nil {
		log.Fatal(err)
	}
	run, err = cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: launchID,
		Outcome: sortie.Outcome{Result: json.RawMessage(`{"words":42}`)}, NowMs: now.UnixMilli()})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("event", evs[0].Cursor(), evs[0].Text)
	fmt.Println(run.State, string(run.Result))
	// Output:
	// event 1.1 counting words
	// completed {"words":42}
}

// A run's push configuration: stored, then its delivery recorded, after
// which it is no longer pending.
func ExampleControlPlane_PutPushConfig() {
	ctx := context.Background()
	cp := memory.New()
	defer cp.Close()

	now := time.Now().UnixMilli()
	run := &sortie.Run{ID: sortie.NewRunID(time.UnixMilli(now)),
		Agent: sortie.Manifest{Name: "textstats", Runtime: "go:textstats"}, Variables: json.RawMessage(`{}`)}
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: now})
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := cp.PutPushConfig(ctx, &sortie.PushConfig{RunID: run.ID, ID: "ops", URL: "https://hooks.example.com/sortie"}, now)
	if err != nil {
		log.Fatal(err)
	}
	pending, _, _ := cp.PendingPushConfigs(ctx, now, 10, "")
	fmt.Println(cfg.ID, cfg.URL, "pending:", len(pending))
	err = cp.UpdatePushDelivery(ctx, run.ID, "ops", sortie.PushDelivery{DeliveredVersion: run.Version, Done: true})
	if err != nil {
		log.Fatal(err)
	}
	pending, _, _ = cp.PendingPushConfigs(ctx, now, 10, "")
	fmt.Println("after delivery, pending:", len(pending))
	// Output:
	// ops https://hooks.example.com/sortie pending: 1
	// after delivery, pending: 0
}
