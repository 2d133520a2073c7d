package controlplanetest

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

func testAppendConcurrent(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	appendNoGaps(t, f, []sortie.ControlPlane{f.cp}, run.ID, lid)
}

// appendNoGaps has 20 goroutines, spread over cps, append 400 events with
// Seq 0 in batches of 1-3, and checks that seqs 1..400 were each given once
// and every batch got consecutive numbers.
func appendNoGaps(t *testing.T, f *fixture, cps []sortie.ControlPlane, id sortie.RunID, lid string) {
	const goroutines, perG = 20, 20
	errs := make([]error, goroutines)
	parallel(goroutines, func(g int) {
		cp := cps[g%len(cps)]
		for i := 0; i < perG; {
			var batch []sortie.Event
			for n := 0; n < 1+(g+i)%3 && i < perG; n, i = n+1, i+1 {
				batch = append(batch, event(fmt.Sprintf("g%d-e%d", g, i)))
			}
			out, err := cp.AppendEvents(f.ctx, sortie.Append{RunID: id, Attempt: 1, LaunchID: lid, Events: batch, NowMs: T0 + 10})
			if err == nil && (len(out) != len(batch) || out[len(out)-1].Seq-out[0].Seq != int64(len(out)-1)) {
				err = fmt.Errorf("stored as %v, want %d consecutive seqs", cursors(out), len(batch))
			}
			if err != nil {
				errs[g] = fmt.Errorf("AppendEvents(goroutine %d, %d events) = %w", g, len(batch), err)
				return
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	evs := f.events(id, sortie.Cursor{}, 1000)
	var want, got []string
	texts := map[string]int{}
	for i := range goroutines * perG {
		want = append(want, "1."+strconv.Itoa(i+1))
	}
	for _, e := range evs {
		got = append(got, e.Cursor().String())
		texts[e.Text]++
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Events after %d concurrent appends: cursors (-want +got):\n%s", goroutines*perG, diff)
	}
	for text, n := range texts {
		if n != 1 {
			t.Errorf("event %q stored %d times, want once", text, n)
		}
	}
	if len(texts) != goroutines*perG {
		t.Errorf("Events holds %d distinct events, want %d", len(texts), goroutines*perG)
	}
}

func testAppendAtomic(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	const n = 40
	errs := make([]error, n)
	parallel(n, func(i int) {
		evs := []sortie.Event{event(fmt.Sprintf("kept-%02d", i))}
		if i%2 == 0 { // a valid event, then a gap: the whole call must fail
			evs = []sortie.Event{event(fmt.Sprintf("lost-%02d", i)), {Seq: 1_000_000, Kind: "gap"}}
		}
		_, errs[i] = f.cp.AppendEvents(f.ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid, Events: evs, NowMs: T0 + 3})
	})
	var want []string
	for i, err := range errs {
		if i%2 == 0 {
			wantErr(t, fmt.Sprintf("AppendEvents(#%d: an event, then a gap)", i), err, sortie.ErrConflict)
			continue
		}
		must(t, fmt.Sprintf("AppendEvents(#%d)", i), err)
		want = append(want, fmt.Sprintf("kept-%02d", i))
	}
	var got []string
	for i, e := range f.events(run.ID, sortie.Cursor{}, 0) {
		if e.Seq != int64(i+1) {
			t.Errorf("Events()[%d] at seq %d, want %d (no gaps)", i, e.Seq, i+1)
		}
		got = append(got, e.Text)
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Events after %d concurrent appends, half of them refused: texts (-want +got):\n%s", n, diff)
	}
}

func testAppendExplicitSeqs(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	a, b, c := event("a"), event("b"), event("c")
	a.Seq, b.Seq = 1, 2
	f.append(run.ID, 1, lid, T0+3, a, b)
	appendErr := func(call string, want error, evs ...sortie.Event) {
		t.Helper()
		_, err := f.cp.AppendEvents(f.ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid, Events: evs, NowMs: T0 + 4})
		wantErr(t, call, err, want)
	}
	stored := f.events(run.ID, sortie.Cursor{}, 0)

	out := f.append(run.ID, 1, lid, T0+4, b)
	if diff := cmp.Diff(stored[1:], out); diff != "" {
		t.Errorf("AppendEvents(seq 2 again, same content) = (-want +got):\n%s", diff)
	}
	c.Seq = 2
	appendErr("AppendEvents(seq 2, other content)", sortie.ErrConflict, c)
	c.Seq = 4
	appendErr("AppendEvents(seq 4 after 2: a gap)", sortie.ErrConflict, c)
	c.Seq = 0
	appendErr("AppendEvents(seq 0 then seq 9 in one batch)", sortie.ErrConflict, c, sortie.Event{Seq: 9, Kind: "x"})
	appendErr("AppendEvents(event without a kind)", sortie.ErrInvalidArgument, c, sortie.Event{})
	if diff := cmp.Diff(stored, f.events(run.ID, sortie.Cursor{}, 0)); diff != "" {
		t.Errorf("refused appends changed the stored events (-want +got):\n%s", diff)
	}

	c.Seq = 3
	d := event("d")
	out = f.append(run.ID, 1, lid, T0+5, b, c, d)
	if diff := cmp.Diff([]string{"1.2", "1.3", "1.4"}, cursors(out)); diff != "" {
		t.Errorf("AppendEvents(seq 2 again, seq 3, seq 0) stored at (-want +got):\n%s", diff)
	}
	var texts []string
	for _, e := range f.events(run.ID, sortie.Cursor{}, 0) {
		texts = append(texts, e.Cursor().String()+" "+e.Text)
	}
	if diff := cmp.Diff([]string{"1.1 a", "1.2 b", "1.3 c", "1.4 d"}, texts); diff != "" {
		t.Errorf("Events after explicit and numbered appends (-want +got):\n%s", diff)
	}
}

func testAppendStale(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	_, lid := f.launch(run.ID, 1, T0+1)
	try := func(call string, attempt int, launchID string, want error) {
		t.Helper()
		_, err := f.cp.AppendEvents(f.ctx, sortie.Append{RunID: run.ID, Attempt: attempt, LaunchID: launchID,
			Events: []sortie.Event{event(call)}, NowMs: T0 + 5})
		wantErr(t, call, err, want)
	}
	try("AppendEvents(attempt 1 launched, unclaimed)", 1, lid, sortie.ErrConflict)
	f.claim(run.ID, 1, lid, T0+2)
	try("AppendEvents(attempt 1, wrong launch ID)", 1, sortie.NewLaunchID(), sortie.ErrConflict)
	try("AppendEvents(attempt 2, not launched)", 2, lid, sortie.ErrConflict)
	run = f.finish(run.ID, 1, lid, failure("flaky", true), T0+3)
	try("AppendEvents(attempt 1 ended)", 1, lid, sortie.ErrConflict)
	run, lid2 := f.next(run, T0+4)
	try("AppendEvents(attempt 1 after attempt 2 was claimed)", 1, lid, sortie.ErrConflict)
	f.append(run.ID, 2, lid2, T0+6, event("from attempt 2"))
	if evs := f.events(run.ID, sortie.Cursor{}, 0); len(evs) != 1 || evs[0].Text != "from attempt 2" {
		t.Errorf("Events after stale appends = %v, want only attempt 2's event", evs)
	}
}

func testFollow(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	f.append(run.ID, 1, lid, T0+3, event("1a"), event("1b"), event("1c"))
	run = f.finish(run.ID, 1, lid, failure("flaky", true), T0+4)
	run, lid2 := f.next(run, T0+5)
	f.append(run.ID, 2, lid2, T0+7, event("2a"))
	f.append(run.ID, 2, lid2, T0+8, event("2b"))
	all := f.events(run.ID, sortie.Cursor{}, 0)
	var texts []string
	for i, e := range all {
		want := event(e.Text)
		want.Attempt, want.Seq = e.Attempt, e.Seq
		if diff := cmp.Diff(want, e); diff != "" {
			t.Errorf("Events()[%d] differs from what was appended (-want +got):\n%s", i, diff)
		}
		texts = append(texts, e.Text)
	}
	if diff := cmp.Diff([]string{"1a", "1b", "1c", "2a", "2b"}, texts); diff != "" {
		t.Fatalf("Events(from the start) texts (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		after sortie.Cursor
		limit int
		want  []sortie.Event
	}{
		{sortie.Cursor{Attempt: 1, Seq: 2}, 0, all[2:]},
		{sortie.Cursor{Attempt: 1, Seq: 3}, 0, all[3:]},
		{sortie.Cursor{Attempt: 1, Seq: 1}, 2, all[1:3]},
		{sortie.Cursor{Attempt: 2}, 0, all[3:]},
		{sortie.Cursor{Attempt: 2, Seq: 2}, 0, []sortie.Event{}},
		{sortie.Cursor{Attempt: 5}, 0, []sortie.Event{}},
	} {
		got := f.events(run.ID, tc.after, tc.limit)
		if diff := cmp.Diff(cursors(tc.want), cursors(got)); diff != "" {
			t.Errorf("Events(after %s, limit %d) (-want +got):\n%s", tc.after, tc.limit, diff)
		}
	}
}

func testEventsLimits(t *testing.T, f *fixture) {
	run, lid := f.working(T0)
	batch := make([]sortie.Event, sortie.MaxEventsPerAppend)
	for i := range 11 {
		for j := range batch {
			batch[j] = event(fmt.Sprintf("%d-%d", i, j))
		}
		f.append(run.ID, 1, lid, T0+3, batch...)
	}
	for _, tc := range []struct {
		after       sortie.Cursor
		limit, want int
	}{
		{sortie.Cursor{}, 0, 500},
		{sortie.Cursor{}, -1, 500},
		{sortie.Cursor{}, 5000, 1000},
		{sortie.Cursor{Attempt: 1, Seq: 1000}, 0, 100},
		{sortie.Cursor{Attempt: 1, Seq: 999}, 0, 101},
		{sortie.Cursor{Attempt: 1, Seq: 1050}, 30, 30},
	} {
		evs := f.events(run.ID, tc.after, tc.limit)
		if len(evs) != tc.want {
			t.Errorf("Events(after %s, limit %d) returned %d events, want %d", tc.after, tc.limit, len(evs), tc.want)
			continue
		}
		first := tc.after.Seq + 1
		if evs[0].Seq != first || !slices.IsSortedFunc(evs, func(a, b sortie.Event) int { return int(a.Seq - b.Seq) }) {
			t.Errorf("Events(after %s, limit %d) starts at %s, want 1.%d and ascending", tc.after, tc.limit, evs[0].Cursor(), first)
		}
	}
}
