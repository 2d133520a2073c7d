package dynamo_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

// readCounter is the real client counting the run items BatchGetItem reads.
type readCounter struct {
	*dynamodb.Client
	mu    sync.Mutex
	items int
}

func (r *readCounter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := r.Client.BatchGetItem(ctx, in, o...)
	if err == nil {
		r.mu.Lock()
		for _, items := range out.Responses {
			r.items += len(items)
		}
		r.mu.Unlock()
	}
	return out, err
}

func (r *readCounter) take() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.items
	r.items = 0
	return n
}

// A list filtered by a rare state or an agent reads only the runs that
// match from the table, whatever the other runs: 41 completed runs of
// agent "busy", 3 failed runs of agent "rare" and a working run. A list of
// working runs reads the live runs once the reconciler's watermark passed
// the lease entries of runs that ended. It also reports the read units
// each list cost.
func TestFilteredListsReadOnlyMatchingRuns(t *testing.T) {
	db, table := newTable(t)
	writer := open(t, db, table, nil)
	rc := &readCounter{Client: newClient()}
	cp := open(t, rc, table, nil)
	ctx := t.Context()
	var failed, working []sortie.RunID
	for i := range 45 {
		run := controlplanetest.NewRun(T0 + int64(i))
		if i == 14 || i == 29 || i == 40 {
			run.Agent = sortie.Manifest{Name: "rare", Runtime: "go:rare"}
		} else {
			run.Agent = sortie.Manifest{Name: "busy", Runtime: "go:busy"}
		}
		lid := fmt.Sprint("l", i)
		run, _, err := writer.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: T0 + int64(i), LaunchID: lid})
		if err != nil {
			t.Fatalf("Reserve = %v", err)
		}
		if _, err := writer.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "w", NowMs: T0 + int64(i)}); err != nil {
			t.Fatalf("Claim = %v", err)
		}
		outcome := sortie.Outcome{Result: []byte(`1`)}
		switch {
		case run.Agent.Name == "rare":
			outcome = sortie.Outcome{Error: &sortie.ErrorMessage{Type: "boom", Message: "boom"}}
			failed = append(failed, run.ID)
		case i == 44:
			working = append(working, run.ID)
			continue
		}
		if _, err := writer.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, Outcome: outcome, NowMs: T0 + int64(i)}); err != nil {
			t.Fatalf("Finish = %v", err)
		}
	}
	slices.Reverse(failed)
	// The reconciler passes the lease entries of every run that ended; the
	// working run's lease is over by then, so it holds the watermark.
	due, err := writer.Expired(ctx, T0+44+controlplane.LaunchGraceMs+dynamo.LeaseMarginMs+1, 0)
	if err != nil || !slices.Equal(ids(due), working) {
		t.Fatalf("Expired = %v, %v, want the working run %v", ids(due), err, working)
	}
	rc.take()
	for _, tc := range []struct {
		q    sortie.ListQuery
		want []sortie.RunID
	}{
		{sortie.ListQuery{State: sortie.StateFailed}, failed},
		{sortie.ListQuery{Agent: "rare"}, failed},
		{sortie.ListQuery{Agent: "rare", State: sortie.StateFailed}, failed},
		{sortie.ListQuery{State: sortie.StateWorking}, working},
	} {
		before := cp.Consumed()
		page, err := cp.List(ctx, tc.q)
		if err != nil {
			t.Fatalf("List(%+v) = %v", tc.q, err)
		}
		if diff := cmp.Diff(tc.want, ids(page.Runs)); diff != "" {
			t.Errorf("List(%+v) (-want +got):\n%s", tc.q, diff)
		}
		read := rc.take()
		t.Logf("List(%+v): %d runs read, %.1f read units", tc.q, read, cp.Consumed().ReadUnits-before.ReadUnits)
		if read != len(tc.want) {
			t.Errorf("List(%+v) read %d runs, want only the %d that match", tc.q, read, len(tc.want))
		}
	}
	var all []sortie.RunID
	for tok := ""; ; {
		page, err := cp.List(ctx, sortie.ListQuery{PageSize: 7, PageToken: tok})
		if err != nil {
			t.Fatalf("List(all, page %q) = %v", tok, err)
		}
		all = append(all, ids(page.Runs)...)
		if tok = page.NextPageToken; tok == "" {
			break
		}
	}
	if len(all) != 45 || !slices.IsSortedFunc(all, func(a, b sortie.RunID) int { return -cmpIDs(a, b) }) {
		t.Errorf("List(all) in pages of 7 = %d runs (sorted newest first: %v), want all 45, newest first", len(all), slices.IsSortedFunc(all, func(a, b sortie.RunID) int { return -cmpIDs(a, b) }))
	}
}

func cmpIDs(a, b sortie.RunID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
