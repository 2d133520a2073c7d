package dynamostream_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/sortie-run/sortie/controlplane/dynamo/dynamostream"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/testrig/dynamodblocal"
)

// A follower's handle is woken when another process (another handle, its
// own client) changes a followed run, from the table's stream.
func TestWatcherWakesFollowersOfChangesMadeElsewhere(t *testing.T) {
	srv, err := dynamodblocal.Start(context.Background())
	if err != nil {
		t.Fatalf("start DynamoDB Local: %v", err)
	}
	defer srv.Stop()
	ctx := t.Context()
	db := dynamodb.NewFromConfig(srv.Config())
	if err := dynamo.CreateTable(ctx, db, "watched"); err != nil {
		t.Fatalf("CreateTable = %v", err)
	}
	arn, err := dynamostream.StreamARN(ctx, db, "watched")
	if err != nil {
		t.Fatalf("StreamARN = %v", err)
	}
	follower, _ := dynamo.New(db, "watched", nil)
	writer, _ := dynamo.New(dynamodb.NewFromConfig(srv.Config()), "watched", nil)
	w, err := dynamostream.New(dynamodbstreams.NewFromConfig(srv.Config()), arn, follower, &dynamostream.Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go w.Run(runCtx)

	followed, _, err := writer.Reserve(ctx, &sortie.Reservation{Run: controlplanetest.NewRun(controlplanetest.T0), NowMs: controlplanetest.T0, LaunchID: "l1"})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	other, _, _ := writer.Reserve(ctx, &sortie.Reservation{Run: controlplanetest.NewRun(controlplanetest.T0), NowMs: controlplanetest.T0, LaunchID: "l1"})
	wake, unsubscribe := follower.Subscribe(followed.ID)
	defer unsubscribe()
	testwait.Until(t, "the watcher reading the stream", 10*time.Second, func() bool { return w.Calls() > 1 })
	if _, err := writer.Claim(ctx, sortie.Claim{RunID: followed.ID, Attempt: 1, LaunchID: "l1", Owner: "w", NowMs: controlplanetest.T0 + 1}); err != nil {
		t.Fatalf("Claim = %v", err)
	}
	select {
	case <-wake:
	case <-time.After(15 * time.Second):
		t.Fatalf("no wake-up within 15 s of another process claiming the followed run")
	}
	if _, err := writer.Claim(ctx, sortie.Claim{RunID: other.ID, Attempt: 1, LaunchID: "l1", Owner: "w", NowMs: controlplanetest.T0 + 1}); err != nil {
		t.Fatalf("Claim(other) = %v", err)
	}
	if _, err := writer.AppendEvents(ctx, sortie.Append{RunID: followed.ID, Attempt: 1, LaunchID: "l1", Events: []sortie.Event{{Kind: "tick"}}}); err != nil {
		t.Fatalf("AppendEvents = %v", err)
	}
	select {
	case <-wake:
	case <-time.After(15 * time.Second):
		t.Fatalf("no wake-up within 15 s of another process appending events to the followed run")
	}
}
