package dynamo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// Event batches: one item per AppendEvents call (more when its events
// exceed batchBytes), keyed by its first seq and holding its events.
const (
	// batchBytes bounds the JSON of one batch item's events.
	batchBytes = 300 << 10
	// appendBytes bounds one call's events: TransactWriteItems takes 4 MB.
	appendBytes = 3_500_000
	// maxSeq is the largest seq an event key can hold (10 digits).
	maxSeq = 9_999_999_999
)

// batch is one stored event item.
type batch struct {
	sk     string
	events []sortie.Event
}

// last returns the seq of the batch's last event, 0 for no batch.
func (b *batch) last() int64 {
	if b == nil || len(b.events) == 0 {
		return 0
	}
	return b.events[len(b.events)-1].Seq
}

func decodeBatch(it item) (*batch, error) {
	b := &batch{sk: valS(it, AttrSK)}
	if err := decodeBody(valB(it, AttrBody), &b.events); err != nil {
		return nil, fmt.Errorf("decode event batch %s: %w", b.sk, err)
	}
	return b, nil
}

// queryEvents returns the batches of run id with keys from lo to hi in key
// order (reverse when desc), at most limit items (0: all), strongly
// consistent. charge puts the read units on the run (see [chargeTo]).
func (c *ControlPlane) queryEvents(ctx context.Context, id sortie.RunID, charge bool, lo, hi string, desc bool, limit int, each func(*batch) bool) error {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(c.table),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: item{":pk": attrS(runPK(id)), ":lo": attrS(lo), ":hi": attrS(hi)},
		ConsistentRead:            aws.Bool(true), ScanIndexForward: aws.Bool(!desc),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	}
	if limit > 0 {
		in.Limit = aws.Int32(int32(limit))
	}
	p := dynamodb.NewQueryPaginator(c.db, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			c.units.call("", Capacity{})
			return apiErr("query events of "+string(id), err)
		}
		c.units.call(chargeTo(id, charge), Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
		for _, it := range out.Items {
			b, err := decodeBatch(it)
			if err != nil {
				return err
			}
			if !each(b) {
				return nil
			}
		}
	}
	return nil
}

// lastEvent returns the attempt's last batch, nil when it has none.
func (c *ControlPlane) lastEvent(ctx context.Context, id sortie.RunID, attempt int) (*batch, error) {
	var last *batch
	err := c.queryEvents(ctx, id, true, eventSK(attempt, 0), eventSK(attempt, maxSeq), true, 1,
		func(b *batch) bool { last = b; return false })
	return last, err
}

// AppendEvents implements [sortie.ControlPlane.AppendEvents]. It checks
// the claim on the run as this handle last saw it (read strongly
// consistent when it has none, or when that copy does not show the claim
// live: sortie.ErrConflict, or ErrTerminal, for a stale claim), numbers
// the events after the attempt's last stored seq (the one this handle
// stored last, else a Query of the last batch) and stores them as one
// batch item with a PutItem conditional on the key being free (several
// items in one TransactWriteItems when they exceed 300 KB), numbering
// again after a concurrent append took the key. It does not read the run
// again: when another process ended the attempt between the check and
// the put, the batch is stored but never part of the run (the ending
// write recorded the attempt's last seq, and Events hides later batches),
// and the worker learns at its next heartbeat. One call's events are at
// most 3.5 MB of JSON (a [*sortie.ValidationError] otherwise).
func (c *ControlPlane) AppendEvents(ctx context.Context, a sortie.Append) ([]sortie.Event, error) {
	if err := controlplane.CheckAttempt(a.RunID, a.Attempt, a.LaunchID); err != nil {
		return nil, err
	}
	if err := c.ready("append events"); err != nil {
		return nil, err
	}
	if err := c.appendable(ctx, a); err != nil {
		return nil, wrap("append events", err)
	}
	out, err := c.appendLoop(ctx, a)
	if err != nil {
		return nil, wrap("append events", err)
	}
	if len(out) > 0 {
		c.cache.setLast(a.RunID, a.Attempt, out[len(out)-1].Seq)
	}
	c.hub.Notify(a.RunID)
	return out, nil
}

// appendable checks a against the run: this handle's copy when it shows
// the claim live, else the run read strongly consistent.
func (c *ControlPlane) appendable(ctx context.Context, a sortie.Append) error {
	if it := c.cache.get(a.RunID); it != nil {
		if rec, err := decodeRecord(it); err == nil {
			err = controlplane.CheckAppend(rec.Run, a)
			if err == nil || errors.Is(err, sortie.ErrInvalidArgument) {
				return err
			}
		}
	}
	_, rec, err := c.getRun(ctx, a.RunID, true)
	if err != nil {
		return err
	}
	return controlplane.CheckAppend(rec.Run, a)
}

// appendLoop numbers and stores the events until no concurrent append
// takes their key first; it returns the events as stored.
func (c *ControlPlane) appendLoop(ctx context.Context, a sortie.Append) ([]sortie.Event, error) {
	for try := 1; ; try++ {
		last, err := c.lastSeq(ctx, a)
		if err != nil {
			return nil, err
		}
		insert, out, err := c.number(ctx, a, last)
		if err != nil || len(insert) == 0 {
			return out, err
		}
		err = c.putBatches(ctx, a, insert)
		if !errors.Is(err, sortie.ErrConflict) {
			return out, err
		}
		c.cache.dropLast(a.RunID, a.Attempt) // another append went first: ask the table
		if try == c.maxTries {
			return nil, fmt.Errorf("append events to %s attempt %d: lost %d races for the next seq: %w", a.RunID, a.Attempt, try, sortie.ErrUnavailable)
		}
	}
}

// lastSeq returns the attempt's last stored seq: the one this handle knows
// when a's explicit seqs do not go past it (then the table has more),
// else the last batch's, by a strongly consistent Query.
func (c *ControlPlane) lastSeq(ctx context.Context, a sortie.Append) (int64, error) {
	if last, ok := c.cache.lastSeq(a.RunID, a.Attempt); ok {
		behind := false
		for _, e := range a.Events {
			behind = behind || e.Seq > last+1
		}
		if !behind {
			return last, nil
		}
	}
	b, err := c.lastEvent(ctx, a.RunID, a.Attempt)
	return b.last(), err
}

// number applies [controlplane.NumberEvents] after the stored seq last,
// reading the stored events an explicit seq refers to.
func (c *ControlPlane) number(ctx context.Context, a sortie.Append, last int64) (insert, out []sortie.Event, err error) {
	from := last + 1
	for _, e := range a.Events {
		if e.Seq > 0 && e.Seq <= last {
			from = min(from, e.Seq)
		}
	}
	stored := map[int64]sortie.Event{}
	if from <= last {
		lo := eventSK(a.Attempt, max(0, from-sortie.MaxEventsPerAppend))
		err := c.queryEvents(ctx, a.RunID, true, lo, eventSK(a.Attempt, last), false, 0, func(b *batch) bool {
			for _, e := range b.events {
				stored[e.Seq] = e
			}
			return true
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return controlplane.NumberEvents(a, last, func(seq int64) (*sortie.Event, bool) {
		e, ok := stored[seq]
		return &e, ok
	})
}

// chunks splits numbered events into batches of at most batchBytes of JSON.
func chunks(evs []sortie.Event) ([][]sortie.Event, error) {
	var out [][]sortie.Event
	size, total := 0, 0
	for i := range evs {
		b, err := json.Marshal(&evs[i])
		if err != nil {
			return nil, fmt.Errorf("encode event %s: %w", evs[i].Cursor(), err)
		}
		total += len(b)
		if len(out) == 0 || size+len(b) > batchBytes {
			out, size = append(out, nil), 0
		}
		out[len(out)-1] = append(out[len(out)-1], evs[i])
		size += len(b)
	}
	if total > appendBytes {
		return nil, sortie.Invalidf("events", "%d bytes of events in one append, limit %d on DynamoDB (one transaction); nothing was stored", total, appendBytes)
	}
	if evs[len(evs)-1].Seq > maxSeq {
		return nil, sortie.Invalidf("event.seq", "%d over %d", evs[len(evs)-1].Seq, int64(maxSeq))
	}
	return out, nil
}

// putBatches stores the events as batch items, each conditional on its key
// being free; sortie.ErrConflict means another append took a key first.
func (c *ControlPlane) putBatches(ctx context.Context, a sortie.Append, evs []sortie.Event) error {
	parts, err := chunks(evs)
	if err != nil {
		return err
	}
	var puts []types.TransactWriteItem
	for _, p := range parts {
		body, err := encodeBody(p)
		if err != nil {
			return fmt.Errorf("encode events of %s: %w", a.RunID, err)
		}
		it := keyOf(runPK(a.RunID), eventSK(a.Attempt, p[0].Seq))
		it[AttrBody] = attrB(body)
		puts = append(puts, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(c.table), Item: it,
			ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames:            map[string]string{"#pk": AttrPK},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}})
	}
	if len(puts) == 1 {
		return c.putOne(ctx, a.RunID, puts[0].Put)
	}
	out, err := c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: puts, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
	if err != nil {
		c.units.call("", Capacity{})
		if ownBatches(err, puts) { // applied by a try whose answer was lost
			return nil
		}
		return apiErr(fmt.Sprintf("put %d event batches of %s", len(puts), a.RunID), err)
	}
	c.units.call(a.RunID, c.units.wrote(out.ConsumedCapacity...))
	return nil
}

func (c *ControlPlane) putOne(ctx context.Context, id sortie.RunID, p *types.Put) error {
	out, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: p.TableName, Item: p.Item, ConditionExpression: p.ConditionExpression,
		ExpressionAttributeNames:            p.ExpressionAttributeNames,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call(id, Capacity{WriteUnits: writeUnits(itemSize(p.Item))}) // a lost condition is billed too
		if old, lost := conditionFailed(err); lost && bytes.Equal(valB(old, AttrBody), valB(p.Item, AttrBody)) {
			return nil // applied by a try whose answer was lost
		}
		return apiErr("put event batch "+valS(p.Item, AttrSK)+" of "+string(id), err)
	}
	c.units.call(id, c.units.wrote(capOf(out.ConsumedCapacity)...))
	return nil
}

// ownBatches reports whether a canceled transaction of batch puts failed
// only because its own batches were stored already (a try applied whose
// answer was lost): every reason is a failed condition whose item is the
// put's.
func ownBatches(err error, puts []types.TransactWriteItem) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != len(puts) {
		return false
	}
	for i, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) != reasonConditionFailed || !bytes.Equal(valB(r.Item, AttrBody), valB(puts[i].Put.Item, AttrBody)) {
			return false
		}
	}
	return true
}
