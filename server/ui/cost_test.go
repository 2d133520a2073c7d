package ui_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/browsertest"
)

// The run page shows the API's cost (total, components, each attempt's
// priced items, the price table's version) and the list a cost column.
func TestCostOnTheRunPageAndTheList(t *testing.T) {
	r := newRig(t)
	run := r.submit(t, `{"sleep_ms":20,"output":1}`)
	got := r.waitState(t, run.ID, sortie.StateCompleted)
	if got.Cost == nil || got.Cost.TotalNanoUSD < 20_000_000 {
		t.Fatalf("run cost %+v, want ≥ 20 ms × $1/s", got.Cost)
	}
	tb := browsertest.NewTab(t)
	openRun(t, tb, r, run.ID)
	tb.Run(t, "see the cost", pageTimeout, visible("#cost table"))
	if s := browsertest.Eval[string](t, tb, `document.querySelector('#cost .big').textContent`); s != got.Cost.TotalNanoUSD.String() {
		t.Errorf("cost shown as %q, want %q", s, got.Cost.TotalNanoUSD.String())
	}
	text := browsertest.Eval[string](t, tb, `document.querySelector('#cost').textContent`)
	for _, want := range []string{"compute", "local.second", "prices2026-12-02+set"} {
		if !strings.Contains(text, want) {
			t.Errorf("cost section %q lacks %q", text, want)
		}
	}
	tb.Run(t, "open the list", pageTimeout, chromedp.Navigate(r.ui), visible(`#runs tr[data-run-id="`+string(run.ID)+`"]`))
	row := browsertest.Eval[string](t, tb, `document.querySelector('#runs tr[data-run-id="`+string(run.ID)+`"]').textContent`)
	if !strings.Contains(row, got.Cost.TotalNanoUSD.String()) {
		t.Errorf("list row %q lacks the cost %s", row, got.Cost.TotalNanoUSD.String())
	}
}
