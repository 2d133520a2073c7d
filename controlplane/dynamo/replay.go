package dynamo

import (
	"bytes"
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// replayPK is the partition key prefix of replay cache items.
const replayPK = "RPL#"

// ReplayCache is a replay cache (crypto/sign's StoreReplayCache) in the
// control plane's table, shared by every host on it: a message ID is one
// item RPL#<scope>#<id> holding its expiry, put with a PutItem
// conditional on the ID being absent or expired (one write unit a
// message), with DynamoDB's TTL on it. Make it with
// [ControlPlane.ReplayCache]; it is safe for concurrent use.
type ReplayCache struct {
	c     *ControlPlane
	scope string
}

// ReplayCache returns the table's replay cache of scope (one per kind of
// message, e.g. "callback"), 1-64 bytes.
func (c *ControlPlane) ReplayCache(scope string) *ReplayCache {
	return &ReplayCache{c: c, scope: scope}
}

// Seen implements crypto/sign's ReplayCache; a failed store counts as
// seen (the message is refused, and a sender sends again with a new ID).
func (r *ReplayCache) Seen(id string, expiry time.Time) bool {
	seen, err := r.SeenContext(context.Background(), id, expiry)
	return seen || err != nil
}

// SeenContext records id until expiry (in ms; TTL removes the item later)
// and reports whether it was recorded with an expiry still ahead of the
// handle's clock. A put applied by a try whose answer was lost is this
// call's own (a random token in the item tells), not a replay. Errors are
// DynamoDB's, mapped like the control plane's (transient ones wrap
// sortie.ErrUnavailable) after the handle's retries.
func (r *ReplayCache) SeenContext(ctx context.Context, id string, expiry time.Time) (bool, error) {
	c := r.c
	if err := c.ready("replay cache"); err != nil {
		return false, err
	}
	exp := expiry.UnixMilli()
	it := keyOf(replayPK+r.scope+"#"+id, "RPL")
	it[AttrExpires], it[AttrTTL], it[AttrToken] = attrN(exp), attrN((exp+999)/1000), attrB(writeToken())
	out, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(c.table), Item: it,
		ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR #exp <= :now"),
		ExpressionAttributeNames:            map[string]string{"#pk": AttrPK, "#exp": AttrExpires},
		ExpressionAttributeValues:           item{":now": attrN(c.nowMs())},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes,
	})
	if old, lost := conditionFailed(err); lost {
		c.units.call("", Capacity{WriteUnits: 1})
		if len(old) == 0 { // DynamoDB left the item out: read it
			if old, err = r.read(ctx, it); err != nil {
				return false, err
			}
		}
		return !bytes.Equal(valB(old, AttrToken), valB(it, AttrToken)), nil
	}
	if err != nil {
		c.units.call("", Capacity{})
		return false, wrap("replay cache", apiErr("put message "+id, err))
	}
	c.units.call("", c.units.wrote(capOf(out.ConsumedCapacity)...))
	return false, nil
}

// read returns the stored item of it's key, strongly consistent.
func (r *ReplayCache) read(ctx context.Context, it item) (item, error) {
	c := r.c
	c.units.fallback()
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table),
		Key: keyOf(valS(it, AttrPK), valS(it, AttrSK)), ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
	if err != nil {
		c.units.call("", Capacity{})
		return nil, wrap("replay cache", apiErr("read message "+valS(it, AttrPK), err))
	}
	c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
	return out.Item, nil
}
