package dynamo

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// getRun reads run id with a strongly consistent GetItem; charge puts its
// read units on the run (see [chargeTo]).
func (c *ControlPlane) getRun(ctx context.Context, id sortie.RunID, charge bool) (item, *record, error) {
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.table), Key: runKey(id), ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		return nil, nil, apiErr("get run "+string(id), err)
	}
	c.units.call(chargeTo(id, charge), Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
	if len(out.Item) == 0 {
		return nil, nil, fmt.Errorf("run %s: %w", id, sortie.ErrNotFound)
	}
	rec, err := decodeRecord(out.Item)
	return out.Item, rec, err
}

// chargeTo returns id when charge is set: the units of the reads and writes
// a change makes are recorded on the run; reads that change nothing (Get,
// List, Events, Expired) are not.
func chargeTo(id sortie.RunID, charge bool) sortie.RunID {
	if charge {
		return id
	}
	return ""
}

func capOf(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

// change loads run id, applies fn and, when fn reports a change, stores the
// run with an UpdateItem conditional on the version, state and attempt it
// was read at. A lost condition returns the current item (ALL_OLD), and fn
// is applied again to it, with no extra read. It returns the run as stored.
func (c *ControlPlane) change(ctx context.Context, op string, id sortie.RunID, fn func(r *sortie.Run) (bool, error)) (*sortie.Run, error) {
	if err := c.ready(op); err != nil {
		return nil, err
	}
	old, rec, err := c.getRun(ctx, id, true)
	for try := 1; err == nil; try++ {
		var stored bool
		rec, stored, old, err = c.try(ctx, id, old, rec, fn)
		if err != nil || stored {
			break
		}
		if try == c.maxTries {
			err = fmt.Errorf("run %s: lost %d conditional writes in a row: %w", id, try, sortie.ErrUnavailable)
		}
	}
	if err != nil {
		return nil, wrap(op, err)
	}
	return rec.Run, nil
}

// try applies fn to rec and writes it conditionally. It reports stored
// true when the write succeeded or fn changed nothing; otherwise it returns
// the item that won (to try again on).
func (c *ControlPlane) try(ctx context.Context, id sortie.RunID, old item, rec *record, fn func(r *sortie.Run) (bool, error)) (*record, bool, item, error) {
	prev := condOf(rec.Run)
	before := endedFlags(rec.Run)
	changed, err := fn(rec.Run)
	if err != nil || !changed {
		return rec, true, nil, err
	}
	if err := c.recordEnds(ctx, rec, before); err != nil {
		return nil, false, nil, err
	}
	pending := c.units.take(id)
	next, in, own, err := c.encodeUpdate(rec, before, old, pending, prev)
	if err != nil {
		c.units.putBack(id, pending)
		return nil, false, nil, err
	}
	out, err := c.db.UpdateItem(ctx, in)
	if err != nil {
		c.units.call("", Capacity{})
		c.units.putBack(id, pending.plus(Capacity{WriteUnits: writeUnits(itemSize(old))}))
		if won, ok := conditionFailed(err); ok {
			if len(won) == 0 {
				return nil, false, nil, fmt.Errorf("run %s: %w", id, sortie.ErrNotFound)
			}
			rec, err := decodeRecord(won)
			return rec, false, won, err
		}
		return nil, false, nil, apiErr("update run "+string(id), err)
	}
	reported := c.units.wrote(capOf(out.ConsumedCapacity)...)
	c.units.call("", reported)
	c.units.correct(id, reported, own)
	return next, true, nil, nil
}

// recordEnds stores, for each claimed attempt that ends in this change, the
// last event seq stored so far: batches a stale worker stores later are
// not part of the run (see AppendEvents).
func (c *ControlPlane) recordEnds(ctx context.Context, rec *record, before []bool) error {
	for i := range rec.Run.Attempts {
		a := &rec.Run.Attempts[i]
		if !a.Ended() || !a.Claimed() || (i < len(before) && before[i]) {
			continue
		}
		last, err := c.lastEvent(ctx, rec.Run.ID, a.Number)
		if err != nil {
			return err
		}
		if rec.Ends == nil {
			rec.Ends = map[string]int64{}
		}
		rec.Ends[strconv.Itoa(a.Number)] = last.last()
	}
	return nil
}

// cond is what a run write is conditional on: the version, state and
// attempt the run was read at.
type cond struct {
	version int64
	state   sortie.State
	attempt int
}

func condOf(r *sortie.Run) cond { return cond{r.Version, r.State, r.Attempt} }

// runAttrs returns the run item's attributes that change with the run.
func runAttrs(rec *record, body []byte) item {
	return item{
		AttrBody: attrB(body), AttrVersion: attrN(rec.Run.Version),
		AttrState: attrS(string(rec.Run.State)), AttrAttempt: attrN(int64(rec.Run.Attempt)),
	}
}

// leaseDue is when the reconciler must look at r, 0 for never.
func leaseDue(r *sortie.Run) int64 {
	if r.State.Terminal() {
		return 0
	}
	return r.LeaseExpiresMs
}

// nextLeaseKey is the lease index key after a change: the run leaves the
// index when nothing is due, and the key only moves earlier. A later lease
// keeps the old key, so the index key is never later than the lease and a
// heartbeat costs no index write; the reconciler moves a key it reaches
// too early (see Expired).
func nextLeaseKey(oldKey, due int64) int64 {
	if due == 0 || oldKey == 0 || due < oldKey {
		return due
	}
	return oldKey
}

// indexUnits is what a change of the lease index key costs: an insert or a
// delete writes the keys-only index once, a moved key twice.
func indexUnits(oldKey, newKey int64) float64 {
	switch {
	case oldKey == newKey:
		return 0
	case oldKey == 0 || newKey == 0:
		return 1
	}
	return 2
}

// encodeUpdate builds the conditional UpdateItem of rec, read as old. The
// record's units include this write's own, computed from the item sizes
// as DynamoDB bills them (the difference to what DynamoDB reports is
// recorded with the run's next write).
func (c *ControlPlane) encodeUpdate(rec *record, before []bool, old item, pending Capacity, prev cond) (*record, *dynamodb.UpdateItemInput, Capacity, error) {
	oldKey := valN(old, AttrLease)
	newKey := nextLeaseKey(oldKey, leaseDue(rec.Run))
	idx := indexUnits(oldKey, newKey)
	own := Capacity{WriteUnits: 1 + idx}
	for range 4 {
		next := &record{Run: rec.Run.Clone(), Units: rec.Units.plus(pending).plus(own), Settled: rec.Settled, Ends: rec.Ends}
		settle(next, before)
		body, err := encodeBody(next)
		if err != nil {
			return nil, nil, own, fmt.Errorf("encode run %s: %w", rec.Run.ID, err)
		}
		set := runAttrs(next, body)
		after := maps.Clone(old)
		maps.Copy(after, set)
		if newKey == 0 {
			delete(after, AttrLeasePK)
			delete(after, AttrLease)
		} else {
			after[AttrLeasePK], after[AttrLease] = attrS(LeasePartition), attrN(newKey)
		}
		size := itemSize(after)
		if size > ItemLimitBytes {
			return nil, nil, own, tooLarge(rec.Run, size)
		}
		need := Capacity{WriteUnits: writeUnits(max(size, itemSize(old))) + idx}
		if need == own {
			return next, c.updateInput(rec.Run.ID, set, oldKey, newKey, prev), own, nil
		}
		own = need
	}
	return nil, nil, own, fmt.Errorf("encode run %s: item size does not settle", rec.Run.ID)
}

// tooLarge refuses a run item over DynamoDB's item limit.
func tooLarge(r *sortie.Run, size int) error {
	return &controlplane.TooLargeError{Run: r.ID, Size: size, Limit: ItemLimitBytes, What: "DynamoDB's item limit (400 KB)"}
}

// updateInput is the UpdateItem that stores set, conditional on the
// version, state and attempt the run was read at.
func (c *ControlPlane) updateInput(id sortie.RunID, set item, oldKey, newKey int64, prev cond) *dynamodb.UpdateItemInput {
	names := map[string]string{"#b": AttrBody, "#v": AttrVersion, "#st": AttrState, "#at": AttrAttempt}
	values := item{":b": set[AttrBody], ":v": set[AttrVersion], ":st": set[AttrState], ":at": set[AttrAttempt],
		":pv": attrN(prev.version), ":pst": attrS(string(prev.state)), ":pat": attrN(int64(prev.attempt))}
	expr := "SET #b = :b, #v = :v, #st = :st, #at = :at"
	switch {
	case newKey == 0 && oldKey != 0:
		names["#ls"], names["#lk"] = AttrLeasePK, AttrLease
		expr += " REMOVE #ls, #lk"
	case newKey != oldKey:
		names["#ls"], names["#lk"] = AttrLeasePK, AttrLease
		values[":ls"], values[":lk"] = attrS(LeasePartition), attrN(newKey)
		expr += ", #ls = :ls, #lk = :lk"
	}
	return &dynamodb.UpdateItemInput{
		TableName: aws.String(c.table), Key: runKey(id),
		UpdateExpression:                    aws.String(expr),
		ConditionExpression:                 aws.String("#v = :pv AND #st = :pst AND #at = :pat"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes,
	}
}
