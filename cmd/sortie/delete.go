package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
	"github.com/spf13/cobra"
)

func newDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "delete RUN_ID...",
		Short: "Delete terminal runs with their events, steps and payload objects",
		Long: `delete removes each terminal run (completed, failed, cancelled, rejected) with
everything stored under it: its events, durable steps, push configurations,
idempotency record, payload objects and its attempts' logs (logs/ in
--state-dir). A live or interrupted run is refused: cancel it first. serve and
reconcile --retention delete runs by age instead, from their reconciler.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withHost(func(t *target) error {
				var errs []error
				for _, a := range args {
					id := sortie.RunID(a).Canonical()
					if err := t.client.Delete(cmd.Context(), id); err != nil {
						errs = append(errs, fmt.Errorf("delete %s: %w", a, err))
						continue
					}
					if g.jsonOut {
						printJSON(os.Stdout, map[string]any{"id": id, "deleted": true})
					} else {
						fmt.Printf("run %s deleted\n", id)
					}
				}
				return errors.Join(errs...)
			})
		},
	}
}

// retentionFlag parses --retention: 0 when not given.
func (g *globals) retentionFlag() (time.Duration, error) {
	d, err := sortie.ParseRetention("--retention", g.retention)
	if err != nil {
		return 0, usagef("%v (env %s)", err, host.EnvRetention)
	}
	return d, nil
}

// retentionCommands are the commands whose reconciler deletes runs by
// age: the others ignore SORTIE_RETENTION and refuse --retention.
var retentionCommands = []string{"serve", "reconcile"}

// usesRetention reports whether the command takes --retention.
func (g *globals) usesRetention() bool {
	return g.command != nil && slices.Contains(retentionCommands, g.command.Name())
}
