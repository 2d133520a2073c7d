package controlplanetest

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

func testExpired(t *testing.T, f *fixture) {
	submitted := f.submitted(T0)    // lease: launch grace
	launched := f.submitted(T0 + 1) // lease: start timeout
	_, _ = f.launch(launched.ID, 1, T0+1)
	claimed, lid := f.working(T0 + 2) // lease: claimed at T0+4
	done, dlid := f.working(T0 + 3)
	f.finish(done.ID, 1, dlid, result(`1`), T0+6)
	asked, alid := f.working(T0 + 4)
	f.finish(asked.ID, 1, alid, interrupt(sortie.StateInputRequired), T0+7)

	claimDue := T0 + 4 + claimed.Policy.LeaseMs
	graceDue := submitted.LeaseExpiresMs
	startDue := T0 + 1 + launched.Policy.StartTimeoutMs
	expired := func(nowMs int64, limit int) []sortie.RunID {
		runs, err := f.cp.Expired(f.ctx, nowMs, limit)
		must(t, fmt.Sprintf("Expired(T0+%d, %d)", nowMs-T0, limit), err)
		for _, r := range runs {
			if r.State.Terminal() || r.LeaseExpiresMs > nowMs {
				t.Errorf("Expired(T0+%d) returned run %s in state %s with lease T0+%d", nowMs-T0, r.ID, r.State, r.LeaseExpiresMs-T0)
			}
		}
		return ids(runs)
	}
	for _, tc := range []struct {
		nowMs int64
		limit int
		want  []sortie.RunID
	}{
		{graceDue - 1, 0, nil},
		{graceDue, 0, []sortie.RunID{submitted.ID}},
		{claimDue - 1, 0, []sortie.RunID{submitted.ID}},
		{claimDue, 0, []sortie.RunID{submitted.ID, claimed.ID}},
		{startDue, 0, []sortie.RunID{submitted.ID, claimed.ID, launched.ID}},
		{startDue + 1_000_000, 2, []sortie.RunID{submitted.ID, claimed.ID}},
	} {
		if diff := gocmp.Diff(tc.want, expired(tc.nowMs, tc.limit), emptyEqual); diff != "" {
			t.Errorf("Expired(T0+%d, %d), oldest lease first (-want +got):\n%s", tc.nowMs-T0, tc.limit, diff)
		}
	}
	_, err := f.cp.Heartbeat(f.ctx, claimOf(claimed.ID, 1, lid, claimDue-1))
	must(t, "Heartbeat", err)
	if got := expired(claimDue, 0); slices.Contains(got, claimed.ID) {
		t.Errorf("Expired(T0+%d) after a heartbeat = %v, want the live lease of %s absent", claimDue-T0, got, claimed.ID)
	}
}

var emptyEqual = gocmp.Comparer(func(a, b []sortie.RunID) bool { return slices.Equal(a, b) })

func testListFilters(t *testing.T, f *fixture) {
	var all []*sortie.Run
	mk := func(i int, contextID, agent string) *sortie.Run {
		run := NewRun(T0 + int64(i))
		run.ContextID = contextID
		if agent != "" {
			run.Agent = sortie.Manifest{Name: agent, Runtime: "go:" + agent}
		}
		run = f.reserve(run, T0+int64(i))
		all = append(all, run)
		return run
	}
	a1, a2, a3 := mk(0, "ctx-a", ""), mk(1, "ctx-a", ""), mk(2, "ctx-a", "")
	b1, b2 := mk(3, "ctx-b", "other"), mk(4, "ctx-b", "other")
	_, err := f.cp.RequestCancel(f.ctx, a2.ID, "")
	must(t, "RequestCancel", err)
	for _, tc := range []struct {
		q    sortie.ListQuery
		want []*sortie.Run
	}{
		{sortie.ListQuery{}, []*sortie.Run{b2, b1, a3, a2, a1}},
		{sortie.ListQuery{ContextID: "ctx-a"}, []*sortie.Run{a3, a2, a1}},
		{sortie.ListQuery{State: sortie.StateCancelled}, []*sortie.Run{a2}},
		{sortie.ListQuery{Agent: "other"}, []*sortie.Run{b2, b1}},
		{sortie.ListQuery{ContextID: "ctx-a", State: sortie.StateSubmitted}, []*sortie.Run{a3, a1}},
		{sortie.ListQuery{ContextID: "ctx-b", Agent: "probe"}, nil},
		{sortie.ListQuery{ContextID: "nope"}, nil},
	} {
		page, err := f.cp.List(f.ctx, tc.q)
		must(t, fmt.Sprintf("List(%+v)", tc.q), err)
		if diff := gocmp.Diff(ids(tc.want), ids(page.Runs), emptyEqual); diff != "" || page.NextPageToken != "" {
			t.Errorf("List(%+v) = token %q, runs (-want +got):\n%s", tc.q, page.NextPageToken, diff)
		}
	}
	page, err := f.cp.List(f.ctx, sortie.ListQuery{ContextID: "ctx-b"})
	must(t, "List(ctx-b)", err)
	if diff := gocmp.Diff([]*sortie.Run{f.get(b2.ID), f.get(b1.ID)}, page.Runs); diff != "" {
		t.Errorf("List(ctx-b) runs differ from Get (-want +got):\n%s", diff)
	}
	_, err = f.cp.List(f.ctx, sortie.ListQuery{PageSize: 5000})
	wantErr(t, "List(page size 5000)", err, sortie.ErrInvalidArgument)
}

func testListPagination(t *testing.T, f *fixture) {
	var want []*sortie.Run
	for i := range 26 {
		nowMs := T0 + int64(i/3) // three runs share each creation time
		want = append(want, f.reserve(NewRun(nowMs), nowMs))
	}
	slices.SortFunc(want, func(a, b *sortie.Run) int {
		return cmp.Or(cmp.Compare(b.CreatedMs, a.CreatedMs), cmp.Compare(b.ID, a.ID))
	})
	var got []*sortie.Run
	q := sortie.ListQuery{PageSize: 7}
	for pages := 1; ; pages++ {
		page, err := f.cp.List(f.ctx, q)
		must(t, fmt.Sprintf("List(page %d, size 7)", pages), err)
		if len(page.Runs) > 7 || pages > 10 {
			t.Fatalf("List(page %d, size 7) returned %d runs, want at most 7 and at most 4 pages", pages, len(page.Runs))
		}
		got = append(got, page.Runs...)
		if page.NextPageToken == "" {
			if pages != 4 {
				t.Errorf("List of 26 runs by 7 took %d pages, want 4", pages)
			}
			break
		}
		q.PageToken = page.NextPageToken
	}
	if diff := gocmp.Diff(ids(want), ids(got)); diff != "" {
		t.Errorf("List pages of 7: every run once, newest first (-want +got):\n%s", diff)
	}
	page, err := f.cp.List(f.ctx, sortie.ListQuery{})
	must(t, "List(default page size)", err)
	if len(page.Runs) != 26 || page.NextPageToken != "" {
		t.Errorf("List(default page size) = %d runs, token %q, want 26 and none", len(page.Runs), page.NextPageToken)
	}
	for _, tok := range []string{
		"not a token!", "%%%", base64.RawURLEncoding.EncodeToString([]byte(`{"x":1}`)),
		base64.RawURLEncoding.EncodeToString([]byte(`{"created_ms":1,"id":"bad"}`)),
	} {
		_, err := f.cp.List(f.ctx, sortie.ListQuery{PageToken: tok})
		var ve *sortie.ValidationError
		if !errors.Is(err, sortie.ErrInvalidArgument) || !errors.As(err, &ve) || ve.Field != "page_token" {
			t.Errorf("List(page token %q) = %v, want ErrInvalidArgument naming page_token", tok, err)
		}
	}
}
