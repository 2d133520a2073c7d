package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/spf13/cobra"
)

func newFollowCmd(g *globals) *cobra.Command {
	var after string
	c := &cobra.Command{
		Use:   "follow RUN_ID",
		Short: "Print a run's events live until it ends or needs input",
		Long: `Print a run's events live until it ends or needs input. Exit status: 0
completed, 1 failed or rejected, 2 usage or input error, 3 cancelled,
4 interrupted (input-required or auth-required), 130 when you stop following
with Ctrl-C (the run goes on).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cur, err := sortie.ParseCursor(after)
			if err != nil {
				return usagef("--after: %v", err)
			}
			return g.withHost(func(t *target) error {
				return follow(cmd.Context(), g, t, sortie.RunID(args[0]).Canonical(), cur)
			})
		},
	}
	c.Flags().StringVar(&after, "after", "", "print only events after this cursor (ATTEMPT.SEQ)")
	return c
}

// follow prints the run's events and final state, reconciling in the
// background meanwhile, and returns the exit status for the final state.
func follow(ctx context.Context, g *globals, t *target, id sortie.RunID, after sortie.Cursor) error {
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	if t.h != nil { // a remote host reconciles itself
		go reconcileOne(rctx, t.h.Engine(), id, g.reconcile, g.logger(os.Stderr))
	}
	seen := false // an update came: the host was reached
	for u, err := range t.client.Follow(ctx, id, after) {
		if err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				fmt.Fprintf(os.Stderr, "stopped following; the run goes on: %s\n", g.followHint(id, after))
				return &exitError{code: 130}
			}
			if errors.Is(err, sortie.ErrUnavailable) && seen {
				fmt.Fprintf(os.Stderr, "lost the host; the run goes on: %s\n", g.followHint(id, after))
			}
			if ve := (*sortie.ValidationError)(nil); errors.As(err, &ve) && ve.Field == "after" {
				return usagef("--after: %s", ve.Reason)
			}
			return err
		}
		seen = true
		if u.Event != nil {
			printEvent(os.Stdout, g.jsonOut, u.Event)
			after = u.Event.Cursor()
			continue
		}
		printFinal(os.Stdout, g, u.Run)
		return exitFor(u.Run)
	}
	return nil
}

// reconcileOne reconciles run id every interval until ctx ends: this
// command's workers end with it, so it launches no other run.
func reconcileOne(ctx context.Context, e *sortie.Engine, id sortie.RunID, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := e.ReconcileOne(ctx, id); errors.Is(err, sortie.ErrClosed) || ctx.Err() != nil {
			return
		} else if err != nil {
			log.Warn("reconcile", "run", id, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// followHint is the command that follows the run on from after.
func (g *globals) followHint(id sortie.RunID, after sortie.Cursor) string {
	hint := fmt.Sprintf("sortie%s follow %s", g.hostArgs(), id)
	if after != (sortie.Cursor{}) {
		hint += " --after " + after.String()
	}
	return hint
}

func exitFor(run *sortie.Run) error {
	if code := run.State.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

func printEvent(w io.Writer, jsonOut bool, e *sortie.Event) {
	if jsonOut {
		printJSON(w, map[string]any{"event": e})
		return
	}
	text := e.Text
	if text == "" && len(e.Data) > 0 {
		text = string(e.Data)
	}
	fmt.Fprintf(w, "%-6s %-10s %s\n", e.Cursor(), e.Kind, text)
}

func printFinal(w io.Writer, g *globals, run *sortie.Run) {
	if g.jsonOut {
		printJSON(w, map[string]any{"run": run})
		return
	}
	took := time.Duration(run.UpdatedMs-run.CreatedMs) * time.Millisecond
	fmt.Fprintf(w, "run %s %s after %d attempt(s) in %s\n", run.ID, run.State, run.Attempt, took)
	switch {
	case run.State == sortie.StateCompleted:
		printIndented(w, run.Result)
	case run.State.Interrupted() && run.Interrupt != nil:
		fmt.Fprintf(w, "needs %s: %s\nresume with: sortie%s resume %s --input JSON\n", run.State, run.Interrupt.Prompt, g.hostArgs(), run.ID)
	case run.Error != nil:
		fmt.Fprintf(w, "%s: %s\n", run.Error.Type, run.Error.Message)
	case run.Reason != "":
		fmt.Fprintf(w, "reason: %s\n", run.Reason)
	}
}

// printIndented prints JSON indented, keeping the worker's key order.
func printIndented(w io.Writer, raw json.RawMessage) {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		fmt.Fprintln(w, string(raw))
		return
	}
	fmt.Fprintln(w, buf.String())
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
