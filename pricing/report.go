package pricing

import (
	"cmp"
	"slices"
	"time"

	"github.com/sortie-run/sortie"
)

// Report sums the cost of runs created in [FromMs, UntilMs) by agent, by
// UTC day of creation and by context ID, with the most expensive runs.
// Amounts are nano-dollars.
type Report struct {
	FromMs  int64 `json:"from_ms"`
	UntilMs int64 `json:"until_ms"`
	// Runs counts the runs summed; Unpriced those without a cost (a host
	// without prices), counted as 0.
	Runs         int            `json:"runs"`
	Unpriced     int            `json:"unpriced,omitempty"`
	TotalNanoUSD sortie.NanoUSD `json:"total_nano_usd"`
	// PriceVersions are the price table versions that priced the runs.
	PriceVersions []string `json:"price_versions,omitempty"`
	// ByAgent, ByDay (YYYY-MM-DD) and ByContext (runs without a context
	// ID are left out) are sorted by total, highest first.
	ByAgent   []ReportLine `json:"by_agent"`
	ByDay     []ReportLine `json:"by_day"`
	ByContext []ReportLine `json:"by_context"`
	// Top are the most expensive runs, highest first.
	Top []TopRun `json:"top"`
}

// ReportLine is one group of a [Report].
type ReportLine struct {
	Key          string         `json:"key"`
	Runs         int            `json:"runs"`
	TotalNanoUSD sortie.NanoUSD `json:"total_nano_usd"`
}

// TopRun is one of a [Report]'s most expensive runs.
type TopRun struct {
	RunID        sortie.RunID   `json:"run_id"`
	Agent        string         `json:"agent"`
	ContextID    string         `json:"context_id,omitempty"`
	State        sortie.State   `json:"state"`
	CreatedMs    int64          `json:"created_ms"`
	TotalNanoUSD sortie.NanoUSD `json:"total_nano_usd"`
}

// Summer builds a [Report] from runs added one by one. The zero value is
// not usable; see [NewSummer].
type Summer struct {
	r                      Report
	top                    int
	agents, days, contexts map[string]*ReportLine
	versions               map[string]bool
}

// NewSummer returns a Summer of runs created in [fromMs, untilMs) (Unix
// ms) that keeps the top most expensive runs.
func NewSummer(fromMs, untilMs int64, top int) *Summer {
	return &Summer{r: Report{FromMs: fromMs, UntilMs: untilMs}, top: top,
		agents: map[string]*ReportLine{}, days: map[string]*ReportLine{}, contexts: map[string]*ReportLine{},
		versions: map[string]bool{}}
}

// Add counts run if it was created in the report's range, and reports
// whether it was.
func (s *Summer) Add(run *sortie.Run) bool {
	if run.CreatedMs < s.r.FromMs || run.CreatedMs >= s.r.UntilMs {
		return false
	}
	var total sortie.NanoUSD
	if run.Cost == nil {
		s.r.Unpriced++
	} else {
		total = run.Cost.TotalNanoUSD
		s.versions[run.Cost.PriceVersion] = true
	}
	s.r.Runs++
	s.r.TotalNanoUSD = addSat(s.r.TotalNanoUSD, total)
	group(s.agents, run.Agent.Name, total)
	group(s.days, time.UnixMilli(run.CreatedMs).UTC().Format(time.DateOnly), total)
	if run.ContextID != "" {
		group(s.contexts, run.ContextID, total)
	}
	s.r.Top = append(s.r.Top, TopRun{RunID: run.ID, Agent: run.Agent.Name, ContextID: run.ContextID,
		State: run.State, CreatedMs: run.CreatedMs, TotalNanoUSD: total})
	slices.SortStableFunc(s.r.Top, func(a, b TopRun) int { return cmp.Compare(b.TotalNanoUSD, a.TotalNanoUSD) })
	if len(s.r.Top) > s.top {
		s.r.Top = s.r.Top[:s.top]
	}
	return true
}

func group(m map[string]*ReportLine, key string, total sortie.NanoUSD) {
	l := m[key]
	if l == nil {
		l = &ReportLine{Key: key}
		m[key] = l
	}
	l.Runs++
	l.TotalNanoUSD = addSat(l.TotalNanoUSD, total)
}

// Report returns the report of the runs added so far.
func (s *Summer) Report() Report {
	r := s.r
	r.Top = slices.Clone(r.Top)
	r.ByAgent, r.ByDay, r.ByContext = lines(s.agents), lines(s.days), lines(s.contexts)
	for v := range s.versions {
		r.PriceVersions = append(r.PriceVersions, v)
	}
	slices.Sort(r.PriceVersions)
	return r
}

func lines(m map[string]*ReportLine) []ReportLine {
	out := make([]ReportLine, 0, len(m))
	for _, l := range m {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b ReportLine) int {
		return cmp.Or(cmp.Compare(b.TotalNanoUSD, a.TotalNanoUSD), cmp.Compare(a.Key, b.Key))
	})
	return out
}
