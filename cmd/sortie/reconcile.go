package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sortie-run/sortie/host"
)

func newReconcileCmd(g *globals) *cobra.Command {
	var once bool
	c := &cobra.Command{
		Use:   "reconcile",
		Short: "Retry or fail runs whose lease expired (every long-lived sortie command also does this)",
		Long: `Retry or fail runs whose lease expired, every --reconcile-interval.

With --once it reconciles until nothing it started is left undone and exits:
it ends the attempts whose lease expired (or whose compute ended), waits for
their backoff and launches their next attempt; with --retention it then
deletes the expired runs, as each pass of the reconciler does.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.hostURL != "" {
				return usagef("reconcile: the host --host names reconciles its own runs; reconcile works on the embedded state only")
			}
			return g.withHost(func(t *target) error {
				if once {
					retention, err := g.retentionFlag()
					if err != nil {
						return err
					}
					return reconcileOnce(cmd.Context(), t.h, retention)
				}
				t.h.RunReconciler(cmd.Context())
				return nil
			})
		},
	}
	c.Flags().BoolVar(&once, "once", false, "reconcile until what it started is done (retries launched), then exit")
	return c
}

// reconcileOnce is reconcile --once: every run reconciled, then with a
// retention one pass deleting the expired runs (Host.ExpireRuns).
func reconcileOnce(ctx context.Context, h *host.Host, retention time.Duration) error {
	n, err := h.Engine().ReconcileAll(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "reconciled %d run(s)\n", n)
	if retention <= 0 {
		return nil
	}
	n, err = h.ExpireRuns(ctx, time.Now())
	if n > 0 || err == nil {
		fmt.Fprintf(os.Stdout, "deleted %d run(s) ended over %v ago\n", n, retention)
	}
	return err
}
