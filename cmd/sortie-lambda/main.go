package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	lambdafn "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/host/telemetry"
)

func main() {
	env, err := lambdafn.LoadEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie-lambda:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: env.LogLevel}))
	tracing, err := telemetry.StartLambdaTracing(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie-lambda:", err)
		os.Exit(2)
	}
	h, err := awshost.Function(context.Background(), env, builtin.Registry(), builtin.Agents(), log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie-lambda:", err)
		os.Exit(1)
	}
	lambda.Start(awshost.Flushing(h, tracing.Flush, log))
}
