package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func newReconcileCmd(g *globals) *cobra.Command {
	var once bool
	c := &cobra.Command{
		Use:   "reconcile",
		Short: "Retry or fail runs whose lease expired (every long-lived sortie command also does this)",
		Long: `Retry or fail runs whose lease expired, every --reconcile-interval.

With --once it reconciles until nothing it started is left undone and exits:
it ends the attempts whose lease expired (or whose compute ended), waits for
their backoff and launches their next attempt.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.hostURL != "" {
				return usagef("reconcile: --host %s reconciles its own runs; reconcile works on the embedded state only", g.hostURL)
			}
			return g.withHost(func(t *target) error {
				if once {
					n, err := t.h.Engine().ReconcileAll(cmd.Context())
					if err != nil {
						return err
					}
					fmt.Fprintf(os.Stdout, "reconciled %d run(s)\n", n)
					return nil
				}
				t.h.RunReconciler(cmd.Context())
				return nil
			})
		},
	}
	c.Flags().BoolVar(&once, "once", false, "reconcile until what it started is done (retries launched), then exit")
	return c
}
