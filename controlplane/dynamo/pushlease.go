package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// LeasePushDelivery implements [sortie.PushStore.LeasePushDelivery] with
// one UpdateItem of the configuration's lease attributes, conditional on
// the configuration existing, not being done (it is in [IndexPush]) and
// its lease being free for owner; it returns the configuration as stored
// after it (ALL_NEW). One write unit for a configuration under 1 KB; the
// push index is not written (its keys do not change). A lost condition's
// item tells ErrConflict (done, or the holder and its lease's end) from
// ErrNotFound.
func (c *ControlPlane) LeasePushDelivery(ctx context.Context, run sortie.RunID, id, owner string, nowMs, untilMs int64) (*sortie.PushConfig, error) {
	if err := controlplane.CheckPushLease(run, id, owner, nowMs, untilMs); err != nil {
		return nil, err
	}
	if err := c.ready("lease push delivery"); err != nil {
		return nil, err
	}
	out, err := c.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(c.table), Key: pushKey(run, id),
		UpdateExpression:    aws.String("SET #lo = :o, #lu = :u"),
		ConditionExpression: aws.String("attribute_exists(#pk) AND attribute_exists(#pp) AND (attribute_not_exists(#lo) OR #lu <= :now OR #lo = :o)"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK, "#pp": AttrPushPK,
			"#lo": AttrLeaseOwner, "#lu": AttrLeaseUntil},
		ExpressionAttributeValues:           item{":o": attrS(owner), ":u": attrN(untilMs), ":now": attrN(nowMs)},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes,
	})
	if old, lost := conditionFailed(err); lost {
		c.units.call("", Capacity{WriteUnits: 1})
		return nil, wrap("lease push delivery", c.leaseRefused(ctx, run, id, old))
	}
	if err != nil {
		c.units.call("", Capacity{})
		return nil, wrap("lease push delivery", apiErr(fmt.Sprintf("lease push config %s of run %s", id, run), err))
	}
	c.units.call("", c.units.wrote(capOf(out.ConsumedCapacity)...))
	cfg, err := decodePush(out.Attributes)
	return cfg, wrap("lease push delivery", err)
}

// leaseRefused is the error of a lost lease condition whose item was old
// (read strongly consistent when DynamoDB left it out).
func (c *ControlPlane) leaseRefused(ctx context.Context, run sortie.RunID, id string, old item) error {
	if len(old) == 0 {
		c.units.fallback()
		out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: pushKey(run, id),
			ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
		if err != nil {
			c.units.call("", Capacity{})
			return apiErr(fmt.Sprintf("read push config %s of run %s", id, run), err)
		}
		c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
		old = out.Item
	}
	if len(old) == 0 {
		return fmt.Errorf("push config %s of run %s: %w", id, run, sortie.ErrNotFound)
	}
	_, pending := old[AttrPushPK]
	return controlplane.PushLeaseConflict(run, id, !pending, valS(old, AttrLeaseOwner), valN(old, AttrLeaseUntil))
}
