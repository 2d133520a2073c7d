package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/pricing"
	"github.com/spf13/cobra"
)

func newCostCmd(g *globals) *cobra.Command {
	var since, until string
	var q sortie.ListQuery
	var top int
	c := &cobra.Command{
		Use:   "cost",
		Short: "Report what runs cost: by agent, by day, by context ID, and the top runs",
		Long: `cost sums the cost of the runs created in a time range (--since, --until) by
agent, by UTC day and by context ID, and lists the most expensive runs. Each
run is priced from its attempts' recorded usage with the host's price table
(--prices, --price); the report names the table's version.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			from, err := parseTime("--since", since, now)
			if err != nil {
				return err
			}
			to, err := parseTime("--until", until, now)
			if err != nil {
				return err
			}
			if !from.Before(to) {
				return usagef("--since %s must be before --until %s", since, until)
			}
			if top < 0 || top > 1000 {
				return usagef("--top %d outside 0..1000", top)
			}
			return g.withHost(func(t *target) error {
				r, err := costReport(cmd.Context(), t.client, q, from, to, top)
				if err != nil {
					return err
				}
				if g.jsonOut {
					return printJSON(os.Stdout, r)
				}
				printCostReport(os.Stdout, r)
				return nil
			})
		},
	}
	f := c.Flags()
	f.StringVar(&since, "since", "720h", "start of the range: a duration before now (24h), a date (2026-12-01) or an RFC 3339 time")
	f.StringVar(&until, "until", "0s", "end of the range (exclusive), as --since; defaults to now")
	f.StringVar(&q.Agent, "agent", "", "only runs of this agent")
	f.StringVar(&q.ContextID, "context", "", "only runs of this context ID")
	f.IntVar(&top, "top", 10, "how many of the most expensive runs to list")
	return c
}

// parseTime reads a duration before now, a date (UTC midnight) or an RFC
// 3339 time.
func parseTime(flag, s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, usagef("%s %q: want a duration before now (24h), a date (2026-12-01) or an RFC 3339 time", flag, s)
}

// costReport lists the runs matching q newest first, page by page, until
// they were created before from, and sums those created in [from, to).
func costReport(ctx context.Context, c *sortie.Client, q sortie.ListQuery, from, to time.Time, top int) (pricing.Report, error) {
	s := pricing.NewSummer(from.UnixMilli(), to.UnixMilli(), top)
	q.PageSize = 1000
	for {
		page, err := c.List(ctx, q)
		if err != nil {
			return pricing.Report{}, err
		}
		for _, r := range page.Runs {
			s.Add(r)
		}
		n := len(page.Runs)
		if page.NextPageToken == "" || n == 0 || page.Runs[n-1].CreatedMs < from.UnixMilli() {
			return s.Report(), nil
		}
		q.PageToken = page.NextPageToken
	}
}

func printCostReport(out io.Writer, r pricing.Report) {
	if r.Runs == 0 {
		fmt.Fprintf(out, "no runs created %s to %s match: nothing to report\n", ms(r.FromMs), ms(r.UntilMs))
		return
	}
	prices := "no run carries a price table"
	if len(r.PriceVersions) > 0 {
		prices = "prices " + strings.Join(r.PriceVersions, ", ")
	}
	fmt.Fprintf(out, "%d runs created %s to %s cost %s (%s)\n", r.Runs, ms(r.FromMs), ms(r.UntilMs), r.TotalNanoUSD, prices)
	if r.Unpriced > 0 {
		fmt.Fprintf(out, "%d runs carry no cost (the host prices nothing) and count as $0\n", r.Unpriced)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, sec := range []struct {
		title string
		lines []pricing.ReportLine
	}{{"AGENT", r.ByAgent}, {"DAY", r.ByDay}, {"CONTEXT", r.ByContext}} {
		if len(sec.lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s\tRUNS\tCOST\n", sec.title)
		for _, l := range sec.lines {
			fmt.Fprintf(w, "%s\t%d\t%s\n", l.Key, l.Runs, l.TotalNanoUSD)
		}
	}
	if len(r.Top) > 0 {
		fmt.Fprintf(w, "\nTOP RUN\tAGENT\tSTATE\tCREATED\tCOST\n")
		for _, t := range r.Top {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.RunID, t.Agent, t.State, ms(t.CreatedMs), t.TotalNanoUSD)
		}
	}
	w.Flush()
}
