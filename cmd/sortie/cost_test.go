package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/pricing"
)

// sortie get shows a run's cost; sortie cost sums the runs by agent, day
// and context ID from the same figures. A --price override makes local
// compute cost something: $1 per second = 1,000,000 n$ per ms.
func TestCostOfRuns(t *testing.T) {
	c := newCLI(t)
	price := []string{"--price", "local.second=1"}
	var ids []sortie.RunID
	for _, ctx := range []string{"a", "b", "b"} {
		ids = append(ids, c.submit("probe", "--var", "events=1", "--context", ctx))
	}
	runs := map[sortie.RunID]*sortie.Run{}
	for _, id := range ids {
		waitFor(t, "run "+string(id)+" completed", waitLong, func() bool { return c.get(id).State == sortie.StateCompleted })
		r := c.run(append([]string{"get", string(id), "--json"}, price...)...)
		var run sortie.Run
		if err := json.Unmarshal([]byte(r.stdout), &run); err != nil || run.Cost == nil {
			t.Fatalf("sortie get %s --json = %v, cost %v; want a cost", id, err, run.Cost)
		}
		a := run.Attempts[0]
		want := sortie.NanoUSD(a.Usage.DurationMs) * 1_000_000
		if run.Cost.TotalNanoUSD != want || run.Cost.PriceVersion != "2026-12-02+set" {
			t.Errorf("sortie get %s --json cost = %d n$ (%s), want %d ms × $1/s = %d n$ with version 2026-12-02+set",
				id, run.Cost.TotalNanoUSD, run.Cost.PriceVersion, a.Usage.DurationMs, want)
		}
		runs[id] = &run
	}
	text := c.run(append([]string{"get", string(ids[0])}, price...)...)
	if !strings.Contains(text.stdout, "cost ") || !strings.Contains(text.stdout, "compute $") || !strings.Contains(text.stdout, "prices 2026-12-02+set") {
		t.Errorf("sortie get %s shows no cost line with compute and the prices' version:\n%s", ids[0], text.stdout)
	}
	r := c.run(append([]string{"cost", "--json", "--since", "1h", "--top", "2"}, price...)...)
	var rep pricing.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("sortie cost --json = %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	var total, b sortie.NanoUSD
	for id, run := range runs {
		total += run.Cost.TotalNanoUSD
		if id != ids[0] {
			b += run.Cost.TotalNanoUSD
		}
	}
	if rep.Runs != 3 || rep.TotalNanoUSD != total || len(rep.ByAgent) != 1 || rep.ByAgent[0].Key != "probe" || len(rep.Top) != 2 {
		t.Errorf("sortie cost --json = %d runs, total %d, by agent %+v, %d top; want 3 runs, %d, probe only, 2 top",
			rep.Runs, rep.TotalNanoUSD, rep.ByAgent, len(rep.Top), total)
	}
	ctxs := map[string]sortie.NanoUSD{}
	for _, l := range rep.ByContext {
		ctxs[l.Key] = l.TotalNanoUSD
	}
	if ctxs["a"] != runs[ids[0]].Cost.TotalNanoUSD || ctxs["b"] != b {
		t.Errorf("sortie cost by context = %v, want a %d and b %d", ctxs, runs[ids[0]].Cost.TotalNanoUSD, b)
	}
	if r := c.run("cost", "--since", "tomorrow"); r.code != 2 || !strings.Contains(r.stderr, "--since") {
		t.Errorf("sortie cost --since tomorrow: exit %d %q, want 2 naming --since", r.code, r.stderr)
	}
	if r := c.run("get", string(ids[0]), "--price", "local.second=free"); r.code != 2 || !strings.Contains(r.stderr, "--price") {
		t.Errorf("sortie get --price local.second=free: exit %d %q, want 2 naming --price", r.code, r.stderr)
	}
}

// A report of no runs says so, and one of runs without a price table
// says that, never printing an empty "(prices )".
func TestCostReportWithoutPrices(t *testing.T) {
	for _, tc := range []struct {
		r    pricing.Report
		want string
	}{
		{pricing.Report{}, "no runs created"},
		{pricing.Report{Runs: 2, Unpriced: 2}, "(no run carries a price table)"},
	} {
		var b strings.Builder
		printCostReport(&b, tc.r)
		if strings.Contains(b.String(), "(prices )") || !strings.Contains(b.String(), tc.want) {
			t.Errorf("report of %d runs, %d unpriced:\n%s\nwant %q and no empty (prices )", tc.r.Runs, tc.r.Unpriced, b.String(), tc.want)
		}
	}
}
