package dynamo

import (
	"context"
	"errors"
	"fmt"

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
