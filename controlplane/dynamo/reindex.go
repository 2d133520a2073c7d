package dynamo

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/sortie-run/sortie"
)

// ReindexAPI is the part of the DynamoDB client [Reindex] uses.
type ReindexAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Reindex moves the runs of table stored before the sharded indexes into
// them: a run in the old list partition "R" gets its agent's list shard
// (and the agent a registry item), one in the old lease partition "L" its
// lease shard, one in a [RareState] without a state entry gets one, and a
// terminal run without an [IndexEnded] entry (it ended before the index)
// gets one, so retention finds it.
// Each change is an UpdateItem conditional on the old value, so it is
// safe while hosts run; a run changed meanwhile is left for the next
// Reindex. It scans the whole table (a read unit per 4 KB) and returns how
// many runs it moved. Lists and Expired read the old partitions until then.
func Reindex(ctx context.Context, db ReindexAPI, table string) (int, error) {
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		FilterExpression:          aws.String("#sk = :run AND (#lp = :r OR #ls = :l OR attribute_not_exists(#sp) OR attribute_not_exists(#ep))"),
		ExpressionAttributeNames:  map[string]string{"#sk": AttrSK, "#lp": AttrListPK, "#ls": AttrLeasePK, "#sp": AttrStatePK, "#ep": AttrEndedPK},
		ExpressionAttributeValues: item{":run": attrS(runSK), ":r": attrS(legacyListPartition), ":l": attrS(legacyLeasePartition)},
	})
	agents, moved := map[string]bool{}, 0
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return moved, fmt.Errorf("dynamo: reindex %s: scan: %w", table, err)
		}
		for _, it := range page.Items {
			n, err := reindexRun(ctx, db, table, it, agents)
			if err != nil {
				return moved, fmt.Errorf("dynamo: reindex %s: %w", table, err)
			}
			moved += n
		}
	}
	return moved, nil
}

// reindexRun moves one run's index keys; it reports 1 when it moved any.
func reindexRun(ctx context.Context, db ReindexAPI, table string, it item, agents map[string]bool) (int, error) {
	rec, err := decodeRecord(it)
	if err != nil {
		return 0, err
	}
	r := rec.Run
	var changes []reindexChange
	if valS(it, AttrListPK) == legacyListPartition {
		if !agents[r.Agent.Name] {
			if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: keyOf(agentsPK, agentSK+r.Agent.Name)}); err != nil {
				return 0, fmt.Errorf("register agent %s: %w", r.Agent.Name, err)
			}
			agents[r.Agent.Name] = true
		}
		changes = append(changes, reindexChange{AttrListPK, legacyListPartition, ListPartition(r.Agent.Name, shardOf(r.ID))})
	}
	if valS(it, AttrLeasePK) == legacyLeasePartition {
		changes = append(changes, reindexChange{AttrLeasePK, legacyLeasePartition, LeasePartition(shardOf(r.ID))})
	}
	if sp := statePK(r); sp != "" && valS(it, AttrStatePK) == "" {
		changes = append(changes, reindexChange{AttrStatePK, "", sp})
	}
	for _, ch := range changes {
		if err := ch.apply(ctx, db, table, r.ID); err != nil {
			return 0, err
		}
	}
	moved := min(len(changes), 1)
	if r.State.Terminal() && valS(it, AttrEndedPK) == "" {
		if err := addEnded(ctx, db, table, r); err != nil {
			return 0, err
		}
		moved = 1
	}
	return moved, nil
}

// addEnded gives a terminal run that ended before [IndexEnded] its entry,
// conditional on it having none.
func addEnded(ctx context.Context, db ReindexAPI, table string, r *sortie.Run) error {
	_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: runKey(r.ID),
		UpdateExpression:          aws.String("SET #p = :p, #k = :k"),
		ConditionExpression:       aws.String("attribute_not_exists(#p)"),
		ExpressionAttributeNames:  map[string]string{"#p": AttrEndedPK, "#k": AttrEnded},
		ExpressionAttributeValues: item{":p": attrS(EndedPartition(shardOf(r.ID))), ":k": attrN(r.UpdatedMs)},
	})
	if _, lost := conditionFailed(err); err != nil && !lost {
		return fmt.Errorf("add run %s to the ended index: %w", r.ID, err)
	}
	return nil
}

// reindexChange sets one index attribute from old ("" for absent) to now.
type reindexChange struct{ attr, old, now string }

func (ch reindexChange) apply(ctx context.Context, db ReindexAPI, table string, id sortie.RunID) error {
	cond, values := "#a = :old", item{":now": attrS(ch.now), ":old": attrS(ch.old)}
	if ch.old == "" {
		cond = "attribute_not_exists(#a)"
		delete(values, ":old")
	}
	_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: runKey(id),
		UpdateExpression: aws.String("SET #a = :now"), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: map[string]string{"#a": ch.attr}, ExpressionAttributeValues: values,
	})
	if _, lost := conditionFailed(err); lost {
		return nil // changed meanwhile: the next Reindex looks again
	}
	if err != nil {
		return fmt.Errorf("move run %s's %s to %s: %w", id, ch.attr, strings.TrimSpace(ch.now), err)
	}
	return nil
}
