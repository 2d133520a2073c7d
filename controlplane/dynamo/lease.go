package dynamo

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

var errUnprocessed = errors.New("DynamoDB left keys unprocessed: throttled")

// refreshLease moves the lease index key of a run the reconciler reached
// too early to the run's lease, or takes the run out of the index when
// nothing is due. It is conditional on the version and key it read; a
// lost condition means a writer moved on and is not an error. Its units
// are recorded on the run with this handle's next write of it.
func (c *ControlPlane) refreshLease(ctx context.Context, rec *record, oldKey int64) error {
	r := rec.Run
	due := leaseDue(r)
	if due == oldKey {
		return nil
	}
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(c.table), Key: runKey(r.ID),
		ConditionExpression:       aws.String("#v = :v AND #lk = :old"),
		ExpressionAttributeNames:  map[string]string{"#v": AttrVersion, "#lk": AttrLease},
		ExpressionAttributeValues: item{":v": attrN(r.Version), ":old": attrN(oldKey)},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	}
	if due == 0 {
		in.UpdateExpression = aws.String("REMOVE #ls, #lk")
		in.ExpressionAttributeNames["#ls"] = AttrLeasePK
	} else {
		in.UpdateExpression = aws.String("SET #lk = :new")
		in.ExpressionAttributeValues[":new"] = attrN(due)
	}
	out, err := c.db.UpdateItem(ctx, in)
	if _, lost := conditionFailed(err); lost {
		c.units.call(r.ID, Capacity{WriteUnits: 1})
		return nil
	}
	if err != nil {
		c.units.call("", Capacity{})
		return apiErr("move lease index key of "+string(r.ID), err)
	}
	c.units.call(r.ID, c.units.wrote(capOf(out.ConsumedCapacity)...))
	return nil
}
