package awshost_test

import (
	"context"
	"log"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/host/builtin"
)

// A process outside Lambda hosts runs on the DynamoDB table and launches
// them on the worker function, sealing inline configuration with the
// function's KMS keyring (the names are terraform/aws's outputs).
func ExampleOpen() {
	ctx := context.Background()
	h, err := awshost.Open(ctx, awshost.Config{
		Table:    "sortie-runs",
		Function: "sortie-worker",
		KMSKeys:  [][2]string{{"k1", "arn:aws:kms:eu-west-1:111122223333:alias/sortie"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	engine, err := h.Engine(builtin.Agents(), sortie.EngineOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer engine.Close()
	run, err := engine.Submit(ctx, &sortie.SubmitRequest{Agent: "textstats", IdempotencyKey: "nightly-2026-11-30"})
	if err != nil {
		log.Fatal(err)
	}
	log.Println("submitted", run.ID)
}
