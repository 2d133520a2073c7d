package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/spf13/cobra"
)

func newGetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get RUN_ID",
		Short: "Print a run: state, attempts, result or error",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withHost(func(t *target) error {
				run, err := t.client.GetWithSteps(cmd.Context(), sortie.RunID(args[0]).Canonical())
				if err != nil {
					return err
				}
				if g.jsonOut {
					return printJSON(os.Stdout, run)
				}
				printRun(g, run)
				return nil
			})
		},
	}
}

func printRun(g *globals, run *sortie.Run) {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "run\t%s\nagent\t%s %s (%s)\nstate\t%s\n", run.ID, run.Agent.Name, run.Agent.Version, run.Agent.Runtime, run.State)
	if run.Queue != nil {
		fmt.Fprintf(w, "queued\tposition %d for concurrency key %q\n", run.Queue.Position, run.Queue.Key)
	}
	if run.ContextID != "" {
		fmt.Fprintf(w, "context\t%s\n", run.ContextID)
	}
	fmt.Fprintf(w, "created\t%s\nupdated\t%s\n", ms(run.CreatedMs), ms(run.UpdatedMs))
	if run.CancelRequested {
		fmt.Fprintf(w, "cancel requested\tyes\n")
	}
	if run.Reason != "" { // why it was rejected, failed or cancelled
		fmt.Fprintf(w, "reason\t%s\n", run.Reason)
	}
	for _, a := range run.Attempts {
		fmt.Fprintf(w, "attempt %d\t%s launched %s", a.Number, orLive(a.Outcome), ms(a.LaunchedMs))
		if a.Usage != nil {
			fmt.Fprintf(w, ", %d ms", a.Usage.DurationMs)
		}
		if a.Error != nil {
			fmt.Fprintf(w, ", %s", a.Error.Error())
		}
		if a.Ref != nil && a.Ref.Detail["log"] != "" {
			fmt.Fprintf(w, ", log %s", a.Ref.Detail["log"])
		}
		fmt.Fprintln(w)
	}
	printSteps(w, run.Steps)
	if run.Cost != nil {
		fmt.Fprintf(w, "cost\t%s\n", costLine(run.Cost))
	}
	w.Flush()
	switch {
	case run.State == sortie.StateCompleted:
		printIndented(os.Stdout, run.Result)
	case run.State.Interrupted() && run.Interrupt != nil:
		fmt.Printf("needs %s: %s\nresume with: sortie%s resume %s --input JSON\n", run.State, run.Interrupt.Prompt, g.hostArgs(), run.ID)
	case run.Error != nil:
		fmt.Printf("%s: %s\n", run.Error.Type, run.Error.Message)
	}
}

// printSteps prints one line per durable step: name, the attempt that
// ran it, tries and duration, and whether it is secret or kept by
// reference (never a result).
func printSteps(w io.Writer, steps []sortie.Step) {
	for _, st := range steps {
		secret := ""
		if st.Secret {
			secret = ", secret"
		}
		tries := "1 try"
		if st.Tries != 1 {
			tries = fmt.Sprintf("%d tries", st.Tries)
		}
		if st.ResultRef != nil {
			secret += fmt.Sprintf(", by reference (%d bytes)", st.ResultRef.Size)
		}
		fmt.Fprintf(w, "step %s	%s by attempt %d, %s, %d ms%s\n", st.Name, st.Status, st.Attempt, tries, st.DurationMs, secret)
	}
}

func orLive(s sortie.State) string {
	if s == "" {
		return "live"
	}
	return string(s)
}

func ms(v int64) string {
	if v == 0 {
		return "-"
	}
	return time.UnixMilli(v).UTC().Format(time.RFC3339Nano)
}

func newListCmd(g *globals) *cobra.Command {
	var q sortie.ListQuery
	var state string
	c := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			q.State = sortie.State(state)
			return g.withHost(func(t *target) error {
				page, err := t.client.List(cmd.Context(), q)
				if err != nil {
					return err
				}
				if g.jsonOut {
					return printJSON(os.Stdout, page)
				}
				w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "RUN\tAGENT\tSTATE\tATTEMPT\tCREATED")
				for _, r := range page.Runs {
					fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", r.ID, r.Agent.Name, r.State, r.Attempt, ms(r.CreatedMs))
				}
				w.Flush()
				if page.NextPageToken != "" {
					fmt.Printf("more: sortie%s list%s --page-token %s\n", g.hostArgs(), listFlags(q), page.NextPageToken)
				}
				return nil
			})
		},
	}
	f := c.Flags()
	f.StringVar(&q.ContextID, "context", "", "only runs of this context ID")
	f.StringVar(&state, "state", "", "only runs in this state")
	f.StringVar(&q.Agent, "agent", "", "only runs of this agent")
	f.IntVar(&q.PageSize, "page-size", 50, "runs per page (at most 1000)")
	f.StringVar(&q.PageToken, "page-token", "", "the next page token a previous list printed")
	return c
}

// listFlags repeats a query's filters, for the next-page hint.
func listFlags(q sortie.ListQuery) string {
	var b strings.Builder
	for _, f := range [][2]string{{"context", q.ContextID}, {"state", string(q.State)}, {"agent", q.Agent}} {
		if f[1] != "" {
			fmt.Fprintf(&b, " --%s %q", f[0], f[1])
		}
	}
	fmt.Fprintf(&b, " --page-size %d", q.PageSize)
	return b.String()
}

func newCancelCmd(g *globals) *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:   "cancel RUN_ID",
		Short: "Request cancellation; the worker stops and the run becomes cancelled",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withHost(func(t *target) error {
				run, err := t.client.Cancel(cmd.Context(), sortie.RunID(args[0]).Canonical(), reason)
				if err != nil {
					return err
				}
				if g.jsonOut {
					return printJSON(os.Stdout, run)
				}
				if !run.CancelRequested {
					fmt.Printf("run %s already %s; nothing to cancel\n", run.ID, run.State)
					return nil
				}
				fmt.Printf("run %s %s (cancel requested)\n", run.ID, run.State)
				return nil
			})
		},
	}
	c.Flags().StringVar(&reason, "reason", "cancelled by user", fmt.Sprintf("why, stored on the run (at most %d bytes)", sortie.MaxCancelReasonBytes))
	return c
}

func newResumeCmd(g *globals) *cobra.Command {
	var input, inputFile string
	var noFollow bool
	c := &cobra.Command{
		Use:   "resume RUN_ID [--input JSON | --input-file FILE]",
		Short: "Answer an input-required or auth-required run and follow its next attempt",
		Long: `resume answers an input-required or auth-required run: the answer (JSON, from
--input or --input-file; without either it is null) goes to the run's next attempt,
which resume then follows like "sortie follow" (--no-follow prints the run instead,
as "sortie get" does).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			flag := "--input"
			if inputFile != "" {
				b, err := readLimited(inputFile, maxVarsFileBytes) // the host refuses what it cannot keep
				if err != nil {
					return usagef("--input-file: %v", err)
				}
				input, flag = string(b), "--input-file"
			}
			if err := checkJSONArg(flag, []byte(input)); err != nil {
				return err
			}
			return g.withHost(func(t *target) error {
				run, err := t.client.Resume(cmd.Context(), sortie.RunID(args[0]).Canonical(), json.RawMessage(input))
				if err != nil {
					return err
				}
				if noFollow && g.jsonOut {
					return printJSON(os.Stdout, run)
				}
				if noFollow {
					printRun(g, run)
					return nil
				}
				prev := sortie.Cursor{Attempt: run.Attempt - 1, Seq: 1 << 62}
				return follow(cmd.Context(), g, t, run.ID, prev)
			})
		},
	}
	c.Flags().StringVar(&input, "input", "null", "the answer, as JSON (without --input or --input-file: null)")
	c.Flags().StringVar(&inputFile, "input-file", "", "read the answer (JSON) from this file (- for stdin)")
	c.MarkFlagsMutuallyExclusive("input", "input-file")
	c.Flags().BoolVar(&noFollow, "no-follow", false, "print the run (as get does; --json for JSON) and return without following")
	return c
}
