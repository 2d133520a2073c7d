package dynamo

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// maxPushTokenBytes bounds a PendingPushConfigs page token before its
// signature is checked.
const maxPushTokenBytes = 2048

// pendingEntry is a pending configuration and its position in [IndexPush].
type pendingEntry struct {
	cfg sortie.PushConfig
	pos controlplane.PushPosition
}

// PendingPushConfigs implements [sortie.PushStore.PendingPushConfigs]
// with the sparse [IndexPush]: pages in the index's order (NextAttemptMs
// first). It queries the index from the page token's position, reads the
// configurations with a strongly consistent BatchGetItem and keeps those
// still pending (the index is eventually consistent, so an entry may be
// stale for a moment), until it has one more than limit or the index
// ends. A page token is the index position of the page's last
// configuration signed like List's ([Options.PageTokenKey]), never a
// LastEvaluatedKey a caller could forge; a token of another handle
// without the same key is refused.
func (c *ControlPlane) PendingPushConfigs(ctx context.Context, nowMs int64, limit int, pageToken string) ([]sortie.PushConfig, string, error) {
	if err := controlplane.CheckPendingLimit(limit); err != nil {
		return nil, "", err
	}
	after, err := c.verifyPushToken(pageToken)
	if err != nil {
		return nil, "", err
	}
	if err := c.ready("pending push configs"); err != nil {
		return nil, "", err
	}
	got, err := c.pendingEntries(ctx, nowMs, limit+1, after)
	if err != nil {
		return nil, "", wrap("pending push configs", err)
	}
	out := make([]sortie.PushConfig, 0, min(len(got), limit))
	for _, e := range got[:min(len(got), limit)] {
		out = append(out, e.cfg)
	}
	if len(got) <= limit {
		return out, "", nil
	}
	return out, c.signPushToken(got[limit-1].pos), nil
}

// pendingEntries queries [IndexPush] after position after (from the start
// when nil) until it has want configurations pending at nowMs or the index
// ends; it returns them in index order.
func (c *ControlPlane) pendingEntries(ctx context.Context, nowMs int64, want int, after *controlplane.PushPosition) ([]pendingEntry, error) {
	in := &dynamodb.QueryInput{
		TableName: aws.String(c.table), IndexName: aws.String(IndexPush),
		KeyConditionExpression:    aws.String("#p = :p AND #d <= :now"),
		ExpressionAttributeNames:  map[string]string{"#p": AttrPushPK, "#d": AttrPushDue},
		ExpressionAttributeValues: item{":p": attrS(PushPartition), ":now": attrN(nowMs)},
		Limit:                     aws.Int32(int32(want)),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	}
	if after != nil {
		in.ExclusiveStartKey = pushIndexKey(*after)
	}
	var out []pendingEntry
	for {
		page, err := c.db.Query(ctx, in)
		if err != nil {
			c.units.call("", Capacity{})
			return nil, apiErr("query index "+IndexPush, err)
		}
		c.units.call("", Capacity{ReadUnits: sum(capOf(page.ConsumedCapacity)...)})
		entries, err := c.readPending(ctx, page.Items, nowMs)
		if err != nil {
			return nil, err
		}
		out = append(out, entries...)
		if len(out) >= want || len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
		in.Limit = aws.Int32(int32(want - len(out)))
	}
}

// pushIndexKey is the full [IndexPush] key of position p: the index key
// and the table key, as ExclusiveStartKey wants it.
func pushIndexKey(p controlplane.PushPosition) item {
	k := pushKey(p.RunID, p.ID)
	k[AttrPushPK] = attrS(PushPartition)
	k[AttrPushDue] = attrN(p.NextAttemptMs)
	return k
}

// readPending reads the configurations the index entries keys point to,
// strongly consistent, and returns those pending at nowMs in the entries'
// order, each with its entry's position; deleted ones are left out.
func (c *ControlPlane) readPending(ctx context.Context, keys []item, nowMs int64) ([]pendingEntry, error) {
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
	var out []pendingEntry
	for _, k := range keys {
		it, ok := found[[2]string{valS(k, AttrPK), valS(k, AttrSK)}]
		if !ok {
			continue
		}
		cfg, err := decodePush(it)
		if err != nil {
			return nil, err
		}
		if !cfg.Delivery.Done && cfg.Delivery.NextAttemptMs <= nowMs {
			pos := controlplane.PushPositionOf(cfg)
			pos.NextAttemptMs = valN(k, AttrPushDue) // the entry's, which orders the index
			out = append(out, pendingEntry{*cfg, pos})
		}
	}
	return out, nil
}

// signPushToken returns the opaque page token continuing after position
// p, signed like List's under a label of its own, so neither a forged
// position nor a List token passes.
func (c *ControlPlane) signPushToken(p controlplane.PushPosition) string {
	return c.tokens.Sign(controlplane.PushPageLabel, p.Encode())
}

// verifyPushToken returns the position of a token made by signPushToken
// with the same key, nil for the first page, or a [*sortie.ValidationError]
// for field "page_token".
func (c *ControlPlane) verifyPushToken(s string) (*controlplane.PushPosition, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > maxPushTokenBytes {
		return nil, sortie.Invalidf("page_token", "%d bytes, limit %d", len(s), maxPushTokenBytes)
	}
	pos, err := c.tokens.Open(controlplane.PushPageLabel, "PendingPushConfigs", s)
	if err != nil {
		return nil, err
	}
	return controlplane.DecodePushPosition(pos)
}
