// Command sortie-lambda is Sortie's AWS Lambda function (provided.al2023):
// the worker that executes invocations and, with SORTIE_LAMBDA_MODE=
// reconciler, the reconciler of on-failure destination records and
// scheduled events. Its configuration comes from the environment only (the
// Env* constants of package github.com/sortie-run/sortie/functions/lambda).
// It registers the same handlers as the CLI's worker: probe and textstats.
//
// Build it as the function's bootstrap, for arm64 or amd64:
//
//	GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -ldflags='-s -w' -trimpath -o bootstrap ./cmd/sortie-lambda
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sortie-run/sortie/examples/textstats"
	"github.com/sortie-run/sortie/functions"
	lambdafn "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/functions/probe"
)

func main() {
	env, err := lambdafn.LoadEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie-lambda:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: env.LogLevel}))
	reg := functions.NewRegistry()
	probe.Register(reg)
	textstats.Register(reg)
	h, err := env.Handler(context.Background(), reg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie-lambda:", err)
		os.Exit(1)
	}
	lambda.Start(h.Invoke)
}
