package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sortie-run/sortie"
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
	if env.Mode == lambdafn.ModeTrigger {
		th, err := env.TriggerHandler(context.Background(), agents(), log)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sortie-lambda:", err)
			os.Exit(1)
		}
		lambda.Start(th)
		return
	}
	h, err := env.Handler(context.Background(), reg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie-lambda:", err)
		os.Exit(1)
	}
	lambda.Start(h.Invoke)
}

// agents are the agents trigger rules may start: the handlers this binary
// registers.
func agents() sortie.Agents {
	return sortie.Agents{
		"textstats": textstats.Manifest,
		"probe":     {Name: "probe", Version: "1", Runtime: "go:probe", Description: "programmable test agent"},
	}
}
