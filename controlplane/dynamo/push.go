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

// errRetry is a lost race: another writer changed the configuration or the
// counter between a read and a conditional write; read again.
var errRetry = errors.New("lost a conditional write")

// PutPushConfig implements [sortie.PushStore.PutPushConfig]. It reads the
// run's push items and the run item with one strongly consistent Query; a
// replacement is one UpdateItem of URL, key ID, format and sealed token
// (an empty one removes its attribute), conditional on the configuration
// existing; a new configuration is one TransactWriteItems of the item and
// the run's push counter, conditional on the counter being
// under [sortie.MaxPushConfigs], so the limit holds across handles. A new
// configuration starts with CreatedMs = nowMs and no delivery progress.
// The run item is never written: runs are never deleted, so the read
// proves the run exists.
func (c *ControlPlane) PutPushConfig(ctx context.Context, cfg *sortie.PushConfig, nowMs int64) (*sortie.PushConfig, error) {
	if err := controlplane.CheckPushConfig(cfg, nowMs); err != nil {
		return nil, err
	}
	if err := c.ready("put push config"); err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		got, err := c.putPushOnce(ctx, cfg, nowMs)
		if !errors.Is(err, errRetry) {
			return got, wrap("put push config", err)
		}
		if try == c.maxTries || !pause(ctx, try) {
			return nil, wrap("put push config", fmt.Errorf("push config %s of run %s: lost %d conditional writes in a row: %w",
				cfg.ID, cfg.RunID, try, sortie.ErrUnavailable))
		}
	}
}

func (c *ControlPlane) putPushOnce(ctx context.Context, cfg *sortie.PushConfig, nowMs int64) (*sortie.PushConfig, error) {
	found, cfgs, err := c.pushItems(ctx, cfg.RunID)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("push config %s of run %s: %w", cfg.ID, cfg.RunID, sortie.ErrNotFound)
	}
	for _, p := range cfgs {
		if p.ID == cfg.ID {
			return c.replacePush(ctx, cfg)
		}
	}
	if err := controlplane.CheckPushCount(len(cfgs) + 1); err != nil {
		return nil, err
	}
	return c.insertPush(ctx, cfg, nowMs)
}

// pushItems reads, strongly consistent, the run's push configurations in
// ID order and whether the run exists.
func (c *ControlPlane) pushItems(ctx context.Context, run sortie.RunID) (bool, []sortie.PushConfig, error) {
	p := dynamodb.NewQueryPaginator(c.db, &dynamodb.QueryInput{
		TableName: aws.String(c.table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: item{":pk": attrS(runPK(run)), ":lo": attrS(pushSKLow), ":hi": attrS(runSK)},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	})
	found, cfgs := false, []sortie.PushConfig{}
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			c.units.call("", Capacity{})
			return false, nil, apiErr("query push configs of run "+string(run), err)
		}
		c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
		for _, it := range out.Items {
			switch sk := valS(it, AttrSK); {
			case sk == runSK:
				found = true
			case len(sk) > len(pushPrefix) && sk[:len(pushPrefix)] == pushPrefix:
				cfg, err := decodePush(it)
				if err != nil {
					return false, nil, err
				}
				cfgs = append(cfgs, *cfg) // sort key order is ID order
			}
		}
	}
	return found, cfgs, nil
}

// replacePush sets the URL, key ID, format and sealed token of an
// existing configuration and returns it; errRetry when it was deleted
// meanwhile.
func (c *ControlPlane) replacePush(ctx context.Context, cfg *sortie.PushConfig) (*sortie.PushConfig, error) {
	expr, names, values := replaceUpdate(cfg)
	out, err := c.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(c.table), Key: pushKey(cfg.RunID, cfg.ID),
		UpdateExpression: aws.String(expr), ConditionExpression: aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValues: types.ReturnValueAllNew, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if _, lost := conditionFailed(err); lost {
		c.units.call("", Capacity{WriteUnits: 1})
		return nil, errRetry
	}
	if err != nil {
		c.units.call("", Capacity{})
		return nil, apiErr(fmt.Sprintf("replace push config %s of run %s", cfg.ID, cfg.RunID), err)
	}
	c.units.call("", c.units.wrote(capOf(out.ConsumedCapacity)...))
	return decodePush(out.Attributes)
}

// insertPush stores a new configuration and counts it on the run's push
// counter in one transaction. The limit refuses it when the counter is
// full; errRetry when the configuration was created meanwhile or the
// transaction met a concurrent one.
func (c *ControlPlane) insertPush(ctx context.Context, cfg *sortie.PushConfig, nowMs int64) (*sortie.PushConfig, error) {
	it := newPushItem(cfg, nowMs)
	out, err := c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{TableName: aws.String(c.table), Key: pushCountKey(cfg.RunID),
				UpdateExpression:          aws.String("SET #n = if_not_exists(#n, :zero) + :one"),
				ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :max"),
				ExpressionAttributeNames:  map[string]string{"#n": AttrCount},
				ExpressionAttributeValues: item{":zero": attrN(0), ":one": attrN(1), ":max": attrN(sortie.MaxPushConfigs)}}},
			{Put: &types.Put{TableName: aws.String(c.table), Item: it,
				ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": AttrPK}}},
		},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		switch {
		case canceledBy(err, 1), transactionConflict(err):
			return nil, errRetry
		case canceledBy(err, 0):
			return nil, controlplane.CheckPushCount(sortie.MaxPushConfigs + 1)
		}
		return nil, apiErr(fmt.Sprintf("put push config %s of run %s", cfg.ID, cfg.RunID), err)
	}
	c.units.call("", c.units.wrote(out.ConsumedCapacity...))
	return decodePush(it)
}

// GetPushConfig implements [sortie.PushStore.GetPushConfig] with a
// strongly consistent GetItem.
func (c *ControlPlane) GetPushConfig(ctx context.Context, run sortie.RunID, id string) (*sortie.PushConfig, error) {
	if err := controlplane.CheckPushKey(run, id); err != nil {
		return nil, err
	}
	if err := c.ready("get push config"); err != nil {
		return nil, err
	}
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.table), Key: pushKey(run, id), ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		return nil, wrap("get push config", apiErr(fmt.Sprintf("get push config %s of run %s", id, run), err))
	}
	c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
	if len(out.Item) == 0 {
		return nil, wrap("get push config", fmt.Errorf("push config %s of run %s: %w", id, run, sortie.ErrNotFound))
	}
	cfg, err := decodePush(out.Item)
	return cfg, wrap("get push config", err)
}

// ListPushConfigs implements [sortie.PushStore.ListPushConfigs] with one
// strongly consistent Query of the run's push items and the run item.
func (c *ControlPlane) ListPushConfigs(ctx context.Context, run sortie.RunID) ([]sortie.PushConfig, error) {
	if err := run.Validate(); err != nil {
		return nil, err
	}
	if err := c.ready("list push configs"); err != nil {
		return nil, err
	}
	found, cfgs, err := c.pushItems(ctx, run)
	if err == nil && !found {
		err = fmt.Errorf("push configs of run %s: %w", run, sortie.ErrNotFound)
	}
	if err != nil {
		return nil, wrap("list push configs", err)
	}
	return cfgs, nil
}
