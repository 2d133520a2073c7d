package controlplanetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

// pageThrough lists every run of q on the control planes in turn, one
// page from each, and returns the runs in the order listed.
func pageThrough(t *testing.T, f *fixture, cps []sortie.ControlPlane, q sortie.ListQuery) []*sortie.Run {
	t.Helper()
	var got []*sortie.Run
	for page := 0; ; page++ {
		p, err := cps[page%len(cps)].List(f.ctx, q)
		must(t, fmt.Sprintf("List(page %d) on handle %d", page+1, page%len(cps)), err)
		got = append(got, p.Runs...)
		if q.PageToken = p.NextPageToken; q.PageToken == "" || page > 100 {
			return got
		}
	}
}

// testPageTokenOfAnotherStore: a page token is refused by another store
// (another deployment) with an error that says so, not taken for a
// position of its own.
func testPageTokenOfAnotherStore(t *testing.T, f *fixture) {
	for i := range 3 {
		f.reserve(NewRun(T0+int64(i)), T0+int64(i))
	}
	page, err := f.cp.List(f.ctx, sortie.ListQuery{PageSize: 2})
	must(t, "List(page size 2)", err)
	other := f.h.MakeControlPlane(f.ctx, t)
	other.Reserve(f.ctx, &sortie.Reservation{Run: NewRun(T0), NowMs: T0})
	_, err = other.List(f.ctx, sortie.ListQuery{PageSize: 2, PageToken: page.NextPageToken})
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "page_token" || !strings.Contains(ve.Reason, "another deployment") {
		t.Errorf("List on another store with this store's page token = %v, want a ValidationError of page_token naming another deployment", err)
	}
}

// testSharedPages: the pages of one list, each read from the next handle
// (another process), hold every run once, newest first.
func testSharedPages(t *testing.T, f *fixture) {
	var want []sortie.RunID
	for i := range 11 {
		run := NewRun(T0 + int64(i/2))
		if i%3 == 0 {
			run.Agent = sortie.Manifest{Name: "other", Runtime: "go:other"}
		}
		want = append(want, f.reserve(run, T0+int64(i/2)).ID)
	}
	got := ids(pageThrough(t, f, peers(f), sortie.ListQuery{PageSize: 3}))
	if diff := gocmp.Diff(sortedNewestFirst(want), got); diff != "" {
		t.Errorf("List in pages of 3, each page from the next handle: every run once, newest first (-want +got):\n%s", diff)
	}
}

// sortedNewestFirst sorts run IDs as List orders their runs when each
// run's CreatedMs is its ID's time (NewRun's): a ULID sorts by time first.
func sortedNewestFirst(ids []sortie.RunID) []sortie.RunID {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b sortie.RunID) int { return -strings.Compare(string(a), string(b)) })
	return out
}
