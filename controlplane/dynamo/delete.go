package dynamo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// Delete implements [sortie.ControlPlane.Delete]: sortie.ErrNotFound for
// an unknown run, sortie.ErrConflict for a run that is not terminal, a
// [*sortie.ValidationError] for a malformed ID. It reads the run
// (strongly consistent), deletes the other items of its partition
// (events, steps, push configurations) one DeleteItem each (1 write unit
// a small item, as a batch would cost), then the idempotency record of
// the run's key in the default scope (the engine's) when it names the
// run, and the run item last. A record of another scope is left to its
// expiry: a reservation of that scope and key before then stores the run
// again as reserved, as after any lost run item. A deletion
// that stops half way leaves a terminal run that Ended lists again and
// Delete finishes.
func (c *ControlPlane) Delete(ctx context.Context, id sortie.RunID) error {
	if err := id.Validate(); err != nil {
		return err
	}
	if err := c.ready("delete"); err != nil {
		return err
	}
	if err := c.delete(ctx, id); err != nil {
		return wrap("delete", err)
	}
	c.cache.forget(id)
	c.hub.Notify(id)
	return nil
}

func (c *ControlPlane) delete(ctx context.Context, id sortie.RunID) error {
	_, rec, err := c.getRun(ctx, id, false)
	if err != nil {
		return err
	}
	if err := controlplane.Deletable(rec.Run); err != nil {
		return err
	}
	keys, err := c.partitionKeys(ctx, id)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if valS(k, AttrSK) != runSK {
			if err := c.deleteItem(ctx, &dynamodb.DeleteItemInput{Key: k}); err != nil {
				return err
			}
		}
	}
	if key := rec.Run.IdempotencyKey; key != "" {
		err := c.deleteItem(ctx, &dynamodb.DeleteItemInput{
			Key:                       keyOf(idemPK(controlplane.DefaultScope, key), idemSK),
			ConditionExpression:       aws.String("#rid = :rid"),
			ExpressionAttributeNames:  map[string]string{"#rid": AttrRunID},
			ExpressionAttributeValues: item{":rid": attrS(string(id))},
		})
		if err != nil && !errors.Is(err, sortie.ErrConflict) { // absent, or another run's: kept
			return err
		}
	}
	err = c.deleteItem(ctx, &dynamodb.DeleteItemInput{Key: runKey(id),
		ConditionExpression: aws.String("attribute_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": AttrPK}})
	if errors.Is(err, sortie.ErrConflict) {
		return fmt.Errorf("run %s: deleted meanwhile: %w", id, sortie.ErrNotFound)
	}
	return err
}

// partitionKeys returns the keys of every item of run id's partition.
func (c *ControlPlane) partitionKeys(ctx context.Context, id sortie.RunID) ([]item, error) {
	p := dynamodb.NewQueryPaginator(c.db, &dynamodb.QueryInput{
		TableName: aws.String(c.table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ProjectionExpression:      aws.String("#pk, #sk"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: item{":pk": attrS(runPK(id))},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	})
	var keys []item
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			c.units.call("", Capacity{})
			return nil, apiErr("query the items of run "+string(id), err)
		}
		c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
		keys = append(keys, out.Items...)
	}
	return keys, nil
}

// deleteItem sends in on the table; a failed condition is
// sortie.ErrConflict.
func (c *ControlPlane) deleteItem(ctx context.Context, in *dynamodb.DeleteItemInput) error {
	in.TableName, in.ReturnConsumedCapacity = aws.String(c.table), types.ReturnConsumedCapacityIndexes
	out, err := c.db.DeleteItem(ctx, in)
	if err != nil {
		c.units.call("", Capacity{WriteUnits: 1}) // a lost condition is billed too
		return apiErr(fmt.Sprintf("delete item %s/%s", valS(in.Key, AttrPK), valS(in.Key, AttrSK)), err)
	}
	c.units.call("", c.units.wrote(capOf(out.ConsumedCapacity)...))
	return nil
}

// endedEntry is a run's position in [IndexEnded].
type endedEntry struct {
	id sortie.RunID
	ms int64
}

// Ended implements [sortie.ControlPlane.Ended] with [IndexEnded]: one
// Query per partition, oldest first, merged. The index is eventually
// consistent: a run that ended a moment ago may be missing for a moment,
// and one just deleted listed (its Delete then gives ErrNotFound).
func (c *ControlPlane) Ended(ctx context.Context, beforeMs int64, limit int) ([]sortie.RunID, error) {
	if err := c.ready("ended"); err != nil {
		return nil, err
	}
	limit = controlplane.ExpiredLimit(limit)
	var all []endedEntry
	for s := range IndexShards {
		got, err := c.endedIn(ctx, EndedPartition(s), beforeMs, limit)
		if err != nil {
			return nil, wrap("ended", err)
		}
		all = append(all, got...)
	}
	slices.SortFunc(all, func(a, b endedEntry) int { return cmp.Or(cmp.Compare(a.ms, b.ms), cmp.Compare(a.id, b.id)) })
	ids := make([]sortie.RunID, 0, min(len(all), limit))
	for _, e := range all[:min(len(all), limit)] {
		ids = append(ids, e.id)
	}
	return ids, nil
}

// endedIn returns up to limit entries of partition before beforeMs.
func (c *ControlPlane) endedIn(ctx context.Context, partition string, beforeMs int64, limit int) ([]endedEntry, error) {
	out, err := c.db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(c.table), IndexName: aws.String(IndexEnded),
		KeyConditionExpression:    aws.String("#p = :p AND #k < :before"),
		ExpressionAttributeNames:  map[string]string{"#p": AttrEndedPK, "#k": AttrEnded},
		ExpressionAttributeValues: item{":p": attrS(partition), ":before": attrN(beforeMs)},
		Limit:                     aws.Int32(int32(limit)),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		return nil, apiErr("query index "+IndexEnded, err)
	}
	c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
	got := make([]endedEntry, 0, len(out.Items))
	for _, it := range out.Items {
		got = append(got, endedEntry{sortie.RunID(strings.TrimPrefix(valS(it, AttrPK), "RUN#")), valN(it, AttrEnded)})
	}
	return got, nil
}
