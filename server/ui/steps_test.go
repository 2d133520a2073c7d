package ui_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/browsertest"
	"github.com/sortie-run/sortie/internal/testwait"
)

// The run page lists the run's durable steps as the API gives them: name,
// status, the attempt that ran it, and its result.
func TestRunPageShowsTheSteps(t *testing.T) {
	r := newRig(t)
	run := r.submit(t, `{"events":0,"steps":2}`)
	testwait.Until(t, "the run completed", pageTimeout, func() bool { return r.get(t, run.ID).State == sortie.StateCompleted })
	tb := browsertest.NewTab(t)
	openRun(t, tb, r, run.ID)
	tb.Run(t, "wait for the steps", pageTimeout, visible("#steps tbody tr"))
	rows := browsertest.Eval[[]string](t, tb, `[...document.querySelectorAll('#steps tbody tr')].map((tr) =>
		[...tr.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent).join(' ') + ' ' + tr.querySelector('pre').textContent.replace(/\s+/g, ''))`)
	want := []string{`step-1 completed 1 {"step":1,"attempt":1}`, `step-2 completed 1 {"step":2,"attempt":1}`}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("steps section (-want +got):\n%s", diff)
	}
}
