package dynamo_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

// rawItem reads an item as stored, strongly consistent.
func rawItem(t *testing.T, db *dynamodb.Client, table, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamo.AttrPK: &types.AttributeValueMemberS{Value: pk}, dynamo.AttrSK: &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatalf("GetItem(%s, %s) = %v, want success", pk, sk, err)
	}
	return out.Item
}

// rawDiff compares two stored items attribute by attribute.
func rawDiff(a, b map[string]types.AttributeValue) string {
	return cmp.Diff(a, b, cmp.Exporter(func(reflect.Type) bool { return true }))
}

func ids(runs []*sortie.Run) []sortie.RunID {
	var out []sortie.RunID
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

// A worker that claims its attempt and dies (no heartbeat, no finish) must
// not leave the run "working" forever: once its lease is over the
// reconciler finds it, ends the attempt and the run gets a new attempt that
// another worker can claim; the dead worker can no longer write.
func TestDeadWorkerRunClaimableAfterLease(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	run := controlplanetest.NewRun(T0)
	run.Policy.HeartbeatMs, run.Policy.LeaseMs = 1000, 3000
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: T0})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	lid := sortie.NewLaunchID()
	if _, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: T0 + 1}); err != nil {
		t.Fatalf("RecordLaunch = %v", err)
	}
	dead := sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "dies", NowMs: T0 + 20_000}
	claimed, err := cp.Claim(ctx, dead)
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	leaseEnd := T0 + 20_000 + 3000
	// The lease index still holds the reservation's early key: Expired
	// reaches the run before its lease, moves the key and leaves it out.
	if got, err := cp.Expired(ctx, leaseEnd-1, 0); err != nil || len(got) != 0 {
		t.Fatalf("Expired(lease end - 1 ms) = %v, %v, want no run", ids(got), err)
	}
	got, err := cp.Expired(ctx, leaseEnd, 0)
	if err != nil || !slices.Equal(ids(got), []sortie.RunID{run.ID}) {
		t.Fatalf("Expired(lease end) = %v, %v, want [%s]: a dead worker's run must come back to the reconciler", ids(got), err, run.ID)
	}
	seen := got[0]
	if seen.Version != claimed.Version || seen.State != sortie.StateWorking {
		t.Errorf("Expired returned version %d state %s, want the claimed run (version %d, working)", seen.Version, seen.State, claimed.Version)
	}
	lost := &sortie.ErrorMessage{Type: sortie.ErrorTypeLeaseExpired, Message: "lease expired", Retryable: true}
	ended, err := cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, IfVersion: seen.Version,
		Outcome: sortie.Outcome{Error: lost}, NowMs: leaseEnd})
	if err != nil || ended.State != sortie.StateWorking || !ended.Current().Ended() {
		t.Fatalf("Finish(lease expired, IfVersion %d) = %v, %v, want attempt 1 ended and the run working (to retry)", seen.Version, stateOf(ended), err)
	}
	lid2 := sortie.NewLaunchID()
	if _, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 2, LaunchID: lid2, NowMs: ended.LeaseExpiresMs}); err != nil {
		t.Fatalf("RecordLaunch(attempt 2) = %v, want success", err)
	}
	if _, err := cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 2, LaunchID: lid2, Owner: "next", NowMs: ended.LeaseExpiresMs}); err != nil {
		t.Fatalf("Claim(attempt 2) = %v, want success: the run must be claimable again", err)
	}
	dead.NowMs = leaseEnd + 10
	if _, err := cp.Heartbeat(ctx, dead); !errors.Is(err, sortie.ErrConflict) {
		t.Errorf("Heartbeat(dead worker, attempt 1) = %v, want ErrConflict", err)
	}
	_, err = cp.AppendEvents(ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid, Events: []sortie.Event{{Kind: "late"}}})
	if !errors.Is(err, sortie.ErrConflict) {
		t.Errorf("AppendEvents(dead worker, attempt 1) = %v, want ErrConflict", err)
	}
	_, err = cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, Outcome: sortie.Outcome{Result: []byte(`1`)}, NowMs: dead.NowMs})
	if !errors.Is(err, sortie.ErrConflict) {
		t.Errorf("Finish(dead worker, attempt 1 after attempt 2 was claimed) = %v, want ErrConflict", err)
	}
	if r, _ := cp.Get(ctx, run.ID); r.State != sortie.StateWorking || r.Attempt != 2 || r.Result != nil {
		t.Errorf("Get after the dead worker's late calls = %v attempt %d result %s, want working attempt 2, no result", stateOf(r), r.Attempt, r.Result)
	}
}

func stateOf(r *sortie.Run) string {
	if r == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s v%d", r.State, r.Version)
}
