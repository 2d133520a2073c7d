package dynamo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

// A run's life on the DynamoDB control plane: create the table once (as
// `sortie dynamo create-table` does), reserve, record the launch, claim it
// as the worker, report an event, finish, and read the capacity the
// attempt consumed. It needs AWS credentials or DynamoDB Local (set
// AWS_ENDPOINT_URL_DYNAMODB), so it has no checked output.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	db := dynamodb.NewFromConfig(cfg)
	if err := dynamo.CreateTable(ctx, db, "sortie-runs"); err != nil && !dynamo.IsTableExists(err) {
		log.Fatal(err)
	}
	cp, err := dynamo.New(db, "sortie-runs", &dynamo.Options{PageTokenKey: []byte("a shared 32-byte page token key!")})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()

	now := time.Now().UnixMilli()
	run := &sortie.Run{ID: sortie.NewRunID(time.Now()), Agent: sortie.Manifest{Name: "textstats", Runtime: "go:textstats"},
		IdempotencyKey: "order-42", RequestHash: "sha256:…"}
	run, _, err = cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: now})
	if err != nil {
		log.Fatal(err)
	}
	lid := sortie.NewLaunchID()
	if _, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: now}); err != nil {
		log.Fatal(err)
	}
	claim := sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "example", NowMs: now}
	if _, err := cp.Claim(ctx, claim); err != nil {
		log.Fatal(err)
	}
	if _, err := cp.AppendEvents(ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid,
		Events: []sortie.Event{{Kind: "progress", Text: "counting words"}}, NowMs: now}); err != nil {
		log.Fatal(err)
	}
	done, err := cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid,
		Outcome: sortie.Outcome{Result: json.RawMessage(`{"words":42}`)}, NowMs: now})
	if err != nil {
		log.Fatal(err)
	}
	u := done.Current().Usage
	fmt.Println(done.State, string(done.Result), u.WriteUnits, u.ReadUnits)
}
