package ui_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/browsertest"
)

// The run page of a run waiting for a concurrency slot shows its place
// in the queue and its key, from the API's run.queue.
func TestQueuedRunShowsItsPosition(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	submit := func() *sortie.Run {
		t.Helper()
		run, err := r.engine.Submit(ctx, &sortie.SubmitRequest{Agent: "limited", Variables: json.RawMessage(`{"until_cancelled":true}`)})
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	first, second := submit(), submit()
	defer r.engine.Cancel(ctx, first.ID, "test over")
	if first.Attempt != 1 || second.Queue == nil || second.Queue.Position != 1 {
		t.Fatalf("first run attempt %d, second run queue %+v; want the first launched and the second queued at 1", first.Attempt, second.Queue)
	}
	tb := browsertest.NewTab(t)
	openRun(t, tb, r, second.ID)
	text := browsertest.Eval[string](t, tb, `document.querySelector('dl.kv').textContent`)
	if !strings.Contains(text, "position 1 for concurrency key limited") {
		t.Errorf("run page details %q lack the queue position", text)
	}
}
