package main

import (
	"os"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/spf13/cobra"
)

func newWorkerCmd(g *globals) *cobra.Command {
	var report string
	c := &cobra.Command{
		Use:   "worker",
		Short: "Execute one invocation read on stdin; write its messages as NDJSON on stdout",
		Long: `The CLI worker. It reads one sortie.invocation/v1 JSON object on stdin, and writes
the worker messages (event, result, error, interrupt) as NDJSON on stdout; logs go
to stderr. With --report control-plane (the default) it also claims the attempt,
heartbeats and reports in the control plane of --state-dir; with --report stdout it
only writes the messages. SIGTERM stops the attempt.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := g.logger(os.Stderr)
			w, err := g.worker(log)
			if err != nil {
				return err
			}
			var mk func(*sortie.Invocation) (functions.Reporter, error)
			switch report {
			case "stdout":
			case "control-plane":
				cp, _, err := g.openControlPlane()
				if err != nil {
					return err
				}
				defer cp.Close()
				mk = func(inv *sortie.Invocation) (functions.Reporter, error) {
					// The invocation says how: the control plane, or
					// callbacks to the host that launched it.
					return functions.NewReporter(inv, cp, "", callbackClient)
				}
			default:
				return usagef("--report %q: want control-plane or stdout", report)
			}
			_, err = w.ServeStdio(cmd.Context(), os.Stdin, os.Stdout, mk)
			return err
		},
	}
	c.Flags().StringVar(&report, "report", "control-plane", "where to report: control-plane (and stdout) or stdout only")
	return c
}
