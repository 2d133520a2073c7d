package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// DeletePushConfig implements [sortie.PushStore.DeletePushConfig]: one
// TransactWriteItems deletes the configuration (conditional on it
// existing) and counts it off the run's push counter.
func (c *ControlPlane) DeletePushConfig(ctx context.Context, run sortie.RunID, id string) error {
	if err := controlplane.CheckPushKey(run, id); err != nil {
		return err
	}
	if err := c.ready("delete push config"); err != nil {
		return err
	}
	for try := 1; ; try++ {
		err := c.deletePushOnce(ctx, run, id)
		if !transactionConflict(err) || try == c.maxTries || !pause(ctx, try) {
			return wrap("delete push config", err)
		}
	}
}

func (c *ControlPlane) deletePushOnce(ctx context.Context, run sortie.RunID, id string) error {
	out, err := c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Delete: &types.Delete{TableName: aws.String(c.table), Key: pushKey(run, id),
				ConditionExpression:      aws.String("attribute_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": AttrPK}}},
			{Update: &types.Update{TableName: aws.String(c.table), Key: pushCountKey(run),
				UpdateExpression:          aws.String("SET #n = #n - :one"),
				ConditionExpression:       aws.String("#n >= :one"),
				ExpressionAttributeNames:  map[string]string{"#n": AttrCount},
				ExpressionAttributeValues: item{":one": attrN(1)}}},
		},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		if canceledBy(err, 0) {
			return fmt.Errorf("push config %s of run %s: %w", id, run, sortie.ErrNotFound)
		}
		return apiErr(fmt.Sprintf("delete push config %s of run %s", id, run), err)
	}
	c.units.call("", c.units.wrote(out.ConsumedCapacity...))
	return nil
}

// UpdatePushDelivery implements [sortie.PushStore.UpdatePushDelivery]
// without a read: one UpdateItem of d conditional on the configuration
// existing and its DeliveredVersion being at most d's. When a higher
// version is stored, a second UpdateItem records the rest of d and keeps
// the version; d replaces the stored progress except that DeliveredVersion
// never decreases. Done takes the configuration out of [IndexPush]. The
// index is keys-only, so an update that keeps NextAttemptMs and Done
// writes no index entry.
func (c *ControlPlane) UpdatePushDelivery(ctx context.Context, run sortie.RunID, id string, d sortie.PushDelivery) error {
	if err := controlplane.CheckPushKey(run, id); err != nil {
		return err
	}
	if err := controlplane.CheckPushDelivery(d); err != nil {
		return err
	}
	if err := c.ready("update push delivery"); err != nil {
		return err
	}
	err := c.updateDelivery(ctx, run, id, d, true)
	if errors.Is(err, errRetry) {
		err = c.updateDelivery(ctx, run, id, d, false)
	}
	return wrap("update push delivery", err)
}

// updateDelivery writes d, with its DeliveredVersion when withVersion is
// set (then errRetry when a higher version is stored).
func (c *ControlPlane) updateDelivery(ctx context.Context, run sortie.RunID, id string, d sortie.PushDelivery, withVersion bool) error {
	expr, names, values := deliveryUpdate(d, withVersion)
	cond := "attribute_exists(#pk)"
	if withVersion {
		cond += " AND (attribute_not_exists(#dv) OR #dv <= :dv)"
	}
	out, err := c.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(c.table), Key: pushKey(run, id),
		UpdateExpression: aws.String(expr), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes,
	})
	if old, lost := conditionFailed(err); lost {
		c.units.call("", Capacity{WriteUnits: 1})
		if len(old) == 0 || !withVersion {
			return fmt.Errorf("push config %s of run %s: %w", id, run, sortie.ErrNotFound)
		}
		return errRetry
	}
	if err != nil {
		c.units.call("", Capacity{})
		return apiErr(fmt.Sprintf("update delivery of push config %s of run %s", id, run), err)
	}
	c.units.call("", c.units.wrote(capOf(out.ConsumedCapacity)...))
	return nil
}

// PendingPushConfigs implements [sortie.PushStore.PendingPushConfigs]
// with the sparse [IndexPush]: it queries keys due at nowMs, oldest
// NextAttemptMs first, reads the configurations with a strongly consistent
// BatchGetItem and keeps those still pending (the index is eventually
// consistent, so an entry may be stale for a moment).
func (c *ControlPlane) PendingPushConfigs(ctx context.Context, nowMs int64, limit int) ([]sortie.PushConfig, error) {
	if err := controlplane.CheckPendingLimit(limit); err != nil {
		return nil, err
	}
	if err := c.ready("pending push configs"); err != nil {
		return nil, err
	}
	p := dynamodb.NewQueryPaginator(c.db, &dynamodb.QueryInput{
		TableName: aws.String(c.table), IndexName: aws.String(IndexPush),
		KeyConditionExpression:    aws.String("#p = :p AND #d <= :now"),
		ExpressionAttributeNames:  map[string]string{"#p": AttrPushPK, "#d": AttrPushDue},
		ExpressionAttributeValues: item{":p": attrS(PushPartition), ":now": attrN(nowMs)},
		Limit:                     aws.Int32(int32(limit)),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	})
	out := []sortie.PushConfig{}
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			c.units.call("", Capacity{})
			return nil, wrap("pending push configs", apiErr("query index "+IndexPush, err))
		}
		c.units.call("", Capacity{ReadUnits: sum(capOf(page.ConsumedCapacity)...)})
		cfgs, err := c.batchGetPush(ctx, page.Items)
		if err != nil {
			return nil, wrap("pending push configs", err)
		}
		for _, cfg := range cfgs {
			if !cfg.Delivery.Done && cfg.Delivery.NextAttemptMs <= nowMs && len(out) < limit {
				out = append(out, cfg)
			}
		}
	}
	return out, nil
}

// batchGetPush reads the configurations the index items point to,
// strongly consistent, in the items' order; deleted ones are left out.
func (c *ControlPlane) batchGetPush(ctx context.Context, keys []item) ([]sortie.PushConfig, error) {
	found := map[[2]string]item{}
	for chunk := range slices.Chunk(keys, 100) {
		req := make([]item, len(chunk))
		for i, k := range chunk {
			req[i] = keyOf(valS(k, AttrPK), valS(k, AttrSK))
		}
		if err := c.batchGetItems(ctx, req, found); err != nil {
			return nil, err
		}
	}
	var out []sortie.PushConfig
	for _, k := range keys {
		it, ok := found[[2]string{valS(k, AttrPK), valS(k, AttrSK)}]
		if !ok {
			continue
		}
		cfg, err := decodePush(it)
		if err != nil {
			return nil, err
		}
		out = append(out, *cfg)
	}
	return out, nil
}

// batchGetItems reads up to 100 keys, trying unprocessed keys again, into
// found by (pk, sk).
func (c *ControlPlane) batchGetItems(ctx context.Context, keys []item, found map[[2]string]item) error {
	for try := 1; len(keys) > 0; try++ {
		out, err := c.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems:           map[string]types.KeysAndAttributes{c.table: {Keys: keys, ConsistentRead: aws.Bool(true)}},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
		})
		if err != nil {
			c.units.call("", Capacity{})
			return apiErr("batch get push configs", err)
		}
		c.units.call("", Capacity{ReadUnits: sum(out.ConsumedCapacity...)})
		for _, it := range out.Responses[c.table] {
			found[[2]string{valS(it, AttrPK), valS(it, AttrSK)}] = it
		}
		keys = out.UnprocessedKeys[c.table].Keys
		if len(keys) > 0 && (try == c.maxTries || !pause(ctx, try)) {
			return apiErr("batch get push configs", errUnprocessed)
		}
	}
	return nil
}
