package dynamo

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// Concurrency limits: a queued run has a queue item, CTL#Q#<key> /
// Q#<run ID> (so one Query reads a key's queue in run ID order), and
// each key a counter item, CTL#LIMITS#<shard> / <key> (control items:
// under the CTL# prefix of [KeyPrefixes]), counting the runs
// holding slots ([AttrActive]) and queued ([AttrWaiting]); the shards
// let one Query per shard find the keys with runs waiting. A queued run
// is reserved with its queue item and a count in one TransactWriteItems;
// its admission (RecordLaunch of attempt 1) updates the run, takes a slot
// (conditional on fewer than the limit taken) and deletes the queue item
// in another; a write that ends a run holding a slot gives it back in
// the same transaction as the run.
const (
	queuePrefix  = "Q#"
	limitsPrefix = "CTL#LIMITS#"
	AttrActive   = "sa" // N: counter item: runs of the key holding slots
	AttrWaiting  = "sq" // N: counter item: runs of the key queued
)

func queueKey(key string, id sortie.RunID) item {
	return keyOf(queuePK(key), queuePrefix+string(id))
}

// queuePK is the partition of key's queue items.
func queuePK(key string) string { return "CTL#Q#" + key }

// limitsShard is the counter partition of key: FNV-1a modulo [IndexShards].
func limitsShard(key string) string {
	h := fnv.New32a()
	h.Write([]byte(key))
	return limitsPrefix + strconv.Itoa(int(h.Sum32()%IndexShards))
}

func counterKey(key string) item { return keyOf(limitsShard(key), key) }

// countUpdate is the Update of key's counter item that adds active and
// waiting; with limit > 0 it is conditional on fewer than limit active.
func (c *ControlPlane) countUpdate(key string, active, waiting int64, limit int) *types.Update {
	u := &types.Update{
		TableName: aws.String(c.table), Key: counterKey(key),
		UpdateExpression:          aws.String("ADD #a :a, #w :w"),
		ExpressionAttributeNames:  map[string]string{"#a": AttrActive, "#w": AttrWaiting},
		ExpressionAttributeValues: item{":a": attrN(active), ":w": attrN(waiting)},
	}
	if limit > 0 {
		u.ConditionExpression = aws.String("attribute_not_exists(#a) OR #a < :limit")
		u.ExpressionAttributeValues[":limit"] = attrN(int64(limit))
	}
	return u
}

// slotItems are the transaction items beside the run's own that apply s.
func (c *ControlPlane) slotItems(s controlplane.SlotChange, id sortie.RunID) []types.TransactWriteItem {
	del := types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(c.table), Key: queueKey(s.Key, id)}}
	switch {
	case s.Acquire:
		return []types.TransactWriteItem{{Update: c.countUpdate(s.Key, 1, -1, s.Limit)}, del}
	case s.Dequeue:
		return []types.TransactWriteItem{{Update: c.countUpdate(s.Key, 0, -1, 0)}, del}
	case s.Release:
		return []types.TransactWriteItem{{Update: c.countUpdate(s.Key, -1, 0, 0)}}
	}
	return nil
}

// updateWithSlots writes the run update in together with the items of s
// and the spend update of sc (when it adds any) in one TransactWriteItems. A lost run condition comes back as a
// ConditionalCheckFailedException holding the item that won, so the
// caller handles it as a lost UpdateItem; a full key gives
// sortie.ErrConcurrencyLimit.
func (c *ControlPlane) updateWithSlots(ctx context.Context, in *dynamodb.UpdateItemInput, s controlplane.SlotChange, sc controlplane.SpendChange, id sortie.RunID) ([]types.ConsumedCapacity, error) {
	run := types.TransactWriteItem{Update: &types.Update{
		TableName: in.TableName, Key: in.Key, UpdateExpression: in.UpdateExpression,
		ConditionExpression: in.ConditionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
		ExpressionAttributeValues:           in.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
	out, err := c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems:          append(append([]types.TransactWriteItem{run}, c.slotItems(s, id)...), c.spendItems(sc)...),
		ClientRequestToken:     aws.String(sortie.NewLaunchID()),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err == nil {
		return out.ConsumedCapacity, nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil, err
	}
	if code, won := reason(tce, 0); code == reasonConditionFailed {
		return nil, &types.ConditionalCheckFailedException{Message: tce.Message, Item: won}
	}
	if code, _ := reason(tce, 1); code == reasonConditionFailed && s.Acquire {
		return nil, fmt.Errorf("run %s: key %q has %d slots taken: %w", id, s.Key, s.Limit, sortie.ErrConcurrencyLimit)
	}
	return nil, err
}

// putQueued stores a new queued run with its queue item and a count of
// its key in one TransactWriteItems, conditional on the run ID being free;
// spent is what the idempotency record's put reported. A lost condition
// whose run item is this one is success (applied, its answer lost);
// another run under the ID is sortie.ErrConflict.
func (c *ControlPlane) putQueued(ctx context.Context, rec *record, it item, spent float64) (*sortie.Run, error) {
	id, key := rec.Run.ID, rec.Run.Concurrency.Key
	q := queueKey(key, id)
	q[AttrRunID] = attrS(string(id))
	out, err := c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(c.table), Item: it,
				ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames:            map[string]string{"#pk": AttrPK},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
			{Put: &types.Put{TableName: aws.String(c.table), Item: q}},
			{Update: c.countUpdate(key, 0, 1, 0)},
		},
		ClientRequestToken:     aws.String(sortie.NewLaunchID()),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		var tce *types.TransactionCanceledException
		code, won := "", item(nil)
		if errors.As(err, &tce) {
			code, won = reason(tce, 0)
		}
		if code != reasonConditionFailed {
			return nil, apiErr("put queued run "+string(id), err)
		}
		if won, err = c.winner(ctx, id, won); err != nil && !errors.Is(err, sortie.ErrNotFound) {
			return nil, err
		}
		if !sameToken(won, it) {
			return nil, fmt.Errorf("reserve run %s: the run ID is taken: %w", id, sortie.ErrConflict)
		}
	} else {
		reported := c.units.wrote(out.ConsumedCapacity...)
		c.units.call("", reported)
		c.units.correct(id, reported.plus(Capacity{WriteUnits: spent}), rec.Units)
	}
	c.cache.put(id, it)
	return rec.Run, nil
}

// putNew stores a new run item: with its queue item when it is queued.
func (c *ControlPlane) putNew(ctx context.Context, rec *record, it item, spent float64) (*sortie.Run, error) {
	if rec.Run.Queued() {
		return c.putQueued(ctx, rec, it, spent)
	}
	return c.putRun(ctx, rec, it, spent)
}

// Queued implements [sortie.ControlPlane.Queued]: a strongly consistent
// Query of the key's queue items, then a strongly consistent read of each
// run.
func (c *ControlPlane) Queued(ctx context.Context, key string, limit int) ([]*sortie.Run, error) {
	if err := c.ready("queued"); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	out, err := c.db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(c.table), ConsistentRead: aws.Bool(true), Limit: aws.Int32(int32(min(limit, 100))),
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :q)"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: item{":pk": attrS(queuePK(key)), ":q": attrS(queuePrefix)},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		return nil, wrap("queued", apiErr("query the queue of "+key, err))
	}
	c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
	runs := make([]*sortie.Run, 0, len(out.Items))
	for _, it := range out.Items {
		_, rec, err := c.getRun(ctx, sortie.RunID(valS(it, AttrRunID)), false)
		if err != nil {
			return nil, wrap("queued", err)
		}
		runs = append(runs, rec.Run)
	}
	return runs, nil
}

// QueuePosition implements [sortie.ControlPlane.QueuePosition] with a
// counting Query of the key's queue items before the run's.
func (c *ControlPlane) QueuePosition(ctx context.Context, key string, id sortie.RunID) (int, error) {
	if err := c.ready("queue position"); err != nil {
		return 0, err
	}
	p := dynamodb.NewQueryPaginator(c.db, &dynamodb.QueryInput{
		TableName: aws.String(c.table), ConsistentRead: aws.Bool(true), Select: types.SelectCount,
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: item{":pk": attrS(queuePK(key)), ":lo": attrS(queuePrefix), ":hi": attrS(queuePrefix + string(id))},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	})
	n := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			c.units.call("", Capacity{})
			return 0, wrap("queue position", apiErr("count the queue of "+key, err))
		}
		c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
		n += int(out.Count)
	}
	return max(n, 1), nil // the range ends with the run's own item
}

// Queues implements [sortie.ControlPlane.Queues]: one eventually
// consistent Query per counter shard (0.5 read units each while the
// shards are small), keeping the keys with runs waiting.
func (c *ControlPlane) Queues(ctx context.Context) ([]sortie.QueueState, error) {
	if err := c.ready("queues"); err != nil {
		return nil, err
	}
	var states []sortie.QueueState
	for shard := range IndexShards {
		p := dynamodb.NewQueryPaginator(c.db, &dynamodb.QueryInput{
			TableName:                 aws.String(c.table), // eventually consistent: a hint for admission
			KeyConditionExpression:    aws.String("#pk = :pk"),
			FilterExpression:          aws.String("#w > :zero"),
			ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#w": AttrWaiting},
			ExpressionAttributeValues: item{":pk": attrS(limitsPrefix + strconv.Itoa(shard)), ":zero": attrN(0)},
			ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				c.units.call("", Capacity{})
				return nil, wrap("queues", apiErr("query the concurrency counts", err))
			}
			c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
			for _, it := range out.Items {
				states = append(states, sortie.QueueState{Key: valS(it, AttrSK),
					Active: int(valN(it, AttrActive)), Waiting: int(valN(it, AttrWaiting))})
			}
		}
	}
	return states, nil
}

// SubscribeSlots implements [sortie.SlotNotifier] for changes made through
// this handle; other hosts' are found by the reconciler's passes.
func (c *ControlPlane) SubscribeSlots() (<-chan struct{}, func()) { return c.hub.SubscribeSlots() }
