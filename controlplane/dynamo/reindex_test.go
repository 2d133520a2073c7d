package dynamo_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

// A run stored before the sharded indexes (list partition R, lease
// partition L, no state entry) is listed and reconciled from the old
// partitions until Reindex moves it; Reindex moves it once. A terminal
// run stored before the ended index is not in it until Reindex adds it.
func TestReindexMovesOldRuns(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	run, lid := working(t, cp)
	failed, err := cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: T0 + 9,
		Outcome: sortie.Outcome{Error: &sortie.ErrorMessage{Type: "boom", Message: "boom"}}})
	if err != nil || failed.State != sortie.StateFailed {
		t.Fatalf("Finish = %v, %v, want failed", stateOf(failed), err)
	}
	// Make the run look as an older build stored it.
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "RUN#" + string(run.ID)}, "sk": &types.AttributeValueMemberS{Value: "RUN"}},
		UpdateExpression:          aws.String("SET lp = :r, ls = :l REMOVE sp, ep, ek"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: "R"}, ":l": &types.AttributeValueMemberS{Value: "L"}}})
	if err != nil {
		t.Fatalf("store the old shape = %v", err)
	}
	fresh := open(t, newClient(), table, nil) // no agent known to its handle
	for _, q := range []sortie.ListQuery{{State: sortie.StateFailed}, {Agent: "probe"}, {}} {
		page, err := fresh.List(ctx, q)
		if err != nil || len(page.Runs) != 1 || page.Runs[0].ID != run.ID {
			t.Errorf("List(%+v) before Reindex = %v, %v, want the old run (read from the old partition)", q, page, err)
		}
	}
	if ended, err := fresh.Ended(ctx, T0+10, 0); err != nil || len(ended) != 0 {
		t.Errorf("Ended before Reindex = %v, %v, want none (the run ended before the index)", ended, err)
	}
	moved, err := dynamo.Reindex(ctx, db, table)
	if err != nil || moved != 1 {
		t.Fatalf("Reindex = %d, %v, want 1 run moved", moved, err)
	}
	it := rawItem(t, db, table, "RUN#"+string(run.ID), "RUN")
	for attr, want := range map[string]string{dynamo.AttrListPK: "A#probe#", dynamo.AttrLeasePK: "L#", dynamo.AttrStatePK: "S#failed#"} {
		got, _ := it[attr].(*types.AttributeValueMemberS)
		if got == nil || len(got.Value) != len(want)+1 || got.Value[:len(want)] != want {
			t.Errorf("after Reindex, %s = %v, want %s<shard>", attr, it[attr], want)
		}
	}
	if ended, err := fresh.Ended(ctx, T0+10, 0); err != nil || len(ended) != 1 || ended[0] != run.ID {
		t.Errorf("Ended after Reindex = %v, %v, want [%s]", ended, err, run.ID)
	}
	if again, err := dynamo.Reindex(ctx, db, table); err != nil || again != 0 {
		t.Errorf("Reindex again = %d, %v, want nothing left to move", again, err)
	}
	for _, q := range []sortie.ListQuery{{State: sortie.StateFailed}, {Agent: "probe"}, {}} {
		page, err := open(t, newClient(), table, nil).List(ctx, q)
		if err != nil || len(page.Runs) != 1 || page.Runs[0].ID != run.ID {
			t.Errorf("List(%+v) after Reindex = %v, %v, want the run", q, page, err)
		}
	}
}
