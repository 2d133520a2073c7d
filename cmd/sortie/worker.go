package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/host"
)

func newWorkerCmd(g *globals) *cobra.Command {
	var report string
	var session bool
	c := &cobra.Command{
		Use:   "worker",
		Short: "Execute one invocation read on stdin; write its messages as NDJSON on stdout",
		Long: `The CLI worker. It reads one sortie.invocation/v1 JSON object on stdin, and writes
the worker messages (event, result, error, interrupt) as NDJSON on stdout; logs go
to stderr. With --report control-plane (the default) it also claims the attempt,
heartbeats and reports in the control plane of --state-dir; with --report stdout it
only writes the messages. SIGTERM stops the attempt.

With --session it is a warm worker of the sortie.session/v1 protocol: it reads
invoke and cancel frames on stdin and executes one attempt after another, writing
each attempt's messages on stdout, until stdin ends. The host that started it
claims and reports the attempts (package functions, SessionVersion).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.config()
			if err != nil {
				return err
			}
			w, err := host.NewWorker(cfg)
			if err != nil {
				return flagError(err)
			}
			defer host.CloseWorker(context.WithoutCancel(cmd.Context()), w)
			if session {
				return w.ServeSession(cmd.Context(), os.Stdin, os.Stdout)
			}
			mk, done, err := g.reporters(report)
			if err != nil {
				return err
			}
			defer done()
			_, err = w.ServeStdio(cmd.Context(), os.Stdin, os.Stdout, mk)
			return err
		},
	}
	c.Flags().StringVar(&report, "report", "control-plane", "where to report: control-plane (and stdout) or stdout only")
	c.Flags().BoolVar(&session, "session", false, "serve attempt after attempt over the sortie.session/v1 protocol on stdin and stdout (a warm worker)")
	return c
}

// reporters returns the worker's reporter factory for --report (nil for
// stdout only) and a function closing what it opened.
func (g *globals) reporters(report string) (func(*sortie.Invocation) (functions.Reporter, error), func(), error) {
	switch report {
	case "stdout":
		return nil, func() {}, nil
	case "control-plane":
	default:
		return nil, nil, usagef("--report %q: want control-plane or stdout", report)
	}
	if g.aws.table != "" {
		return nil, nil, usagef("%s works on the embedded state only; with --dynamodb-table attempts run on the worker Lambda function, or on local workers reporting over callbacks", g.commandName())
	}
	prices, err := g.prices.table()
	if err != nil {
		return nil, nil, err
	}
	// The invocation says how: the control plane, opened on the first
	// invocation that reports there, or callbacks to the host that
	// launched it (a host on DynamoDB, whose state directory holds keys
	// only).
	var cp *sqlite.ControlPlane
	mk := func(inv *sortie.Invocation) (functions.Reporter, error) {
		if cp == nil && inv.Report.Mode != sortie.ReportCallback {
			var err error
			if cp, err = host.OpenState(g.stateDir); err != nil {
				return nil, err
			}
			cp.SetPricer(prices) // budgets are enforced with the host's table
		}
		if cp == nil {
			return host.NewReporter(inv, nil)
		}
		return host.NewReporter(inv, cp)
	}
	return mk, func() {
		if cp != nil {
			cp.Close()
		}
	}, nil
}
