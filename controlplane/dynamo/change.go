package dynamo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// ownWrites are the changes only the claim holder makes (controlplane's
// op names): they start from the handle's cached item, since the worker
// that claimed is what wrote the run last in nearly every case.
var ownWrites = map[string]bool{"heartbeat": true, "finish": true}

// getRun reads run id with a strongly consistent GetItem and caches it;
// charge puts its read units on the run (see [chargeTo]).
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
	if err == nil {
		c.cache.put(id, out.Item)
	}
	return out.Item, rec, err
}

// load returns run id from the handle's cache when cached is set and the
// run is there, else from a strongly consistent read.
func (c *ControlPlane) load(ctx context.Context, id sortie.RunID, cached bool) (item, *record, error) {
	if it := c.cache.get(id); cached && it != nil {
		if rec, err := decodeRecord(it); err == nil {
			return it, rec, nil
		}
	}
	return c.getRun(ctx, id, true)
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

// change loads run id (from the handle's cache for the claim holder's own
// writes, see ownWrites), applies fn and, when fn reports a change, stores
// the run with an UpdateItem conditional on the version, state and
// attempt it was read at. A lost condition returns the current item
// (ALL_OLD, or a consistent read when DynamoDB leaves it out), and fn is
// applied again to it. It returns the run as stored.
func (c *ControlPlane) change(ctx context.Context, op string, id sortie.RunID, fn func(r *sortie.Run) (bool, error)) (*sortie.Run, error) {
	if err := c.ready(op); err != nil {
		return nil, err
	}
	old, rec, err := c.load(ctx, id, ownWrites[op])
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
	if op == "claim" {
		c.cache.setLast(id, rec.Run.Attempt, 0) // a new claim: no events yet
	}
	c.hub.Notify(id)
	return rec.Run, nil
}

// try applies fn to rec and writes it conditionally. It reports stored
// true when the write succeeded or fn changed nothing; otherwise it returns
// the item that won (to try again on).
func (c *ControlPlane) try(ctx context.Context, id sortie.RunID, old item, rec *record, fn func(r *sortie.Run) (bool, error)) (*record, bool, item, error) {
	prev := condOf(rec.Run)
	before := endedFlags(rec.Run)
	slotsBefore, wasTerminal := controlplane.SlotStateOf(rec.Run), rec.Run.State.Terminal()
	changed, err := fn(rec.Run)
	if err != nil || !changed {
		return rec, true, nil, err
	}
	if err := c.recordEnds(ctx, rec, before); err != nil {
		return nil, false, nil, err
	}
	pending := c.units.take(id)
	u, err := c.encodeUpdate(rec, before, old, pending, prev)
	if err != nil {
		c.units.putBack(id, pending)
		return nil, false, nil, err
	}
	slot := controlplane.SlotChangeOf(slotsBefore, rec.Run)
	spend := controlplane.SpendChangeOf(wasTerminal, u.next.Run, c.Pricer())
	consumed, err := c.writeRun(ctx, u.in, slot, spend, id)
	if err != nil {
		c.units.call("", Capacity{})
		c.units.putBack(id, pending.plus(Capacity{WriteUnits: writeUnits(itemSize(old))}))
		won, lost := conditionFailed(err)
		if errors.Is(err, sortie.ErrConcurrencyLimit) {
			return nil, false, nil, err
		} else if !lost {
			return nil, false, nil, apiErr("update run "+string(id), err)
		}
		if won, err = c.winner(ctx, id, won); err != nil {
			return nil, false, nil, err
		}
		if ownWrite(won, u.after) { // this write was applied; its answer was lost
			c.cache.put(id, won)
			return u.next, true, nil, nil
		}
		rec, err := decodeRecord(won)
		return rec, false, won, err
	}
	reported := c.units.wrote(consumed...)
	c.units.call("", reported)
	c.units.correct(id, reported, u.own)
	c.cache.put(id, u.after)
	if slot.Dequeue || slot.Release {
		c.hub.NotifySlots()
	}
	return u.next, true, nil, nil
}

// writeRun sends a run's conditional update: one UpdateItem, or a
// transaction with the concurrency items when the write changes a
// key's counts, and the spend item when it adds to its agent's spend
// (see [ControlPlane.updateWithSlots]).
func (c *ControlPlane) writeRun(ctx context.Context, in *dynamodb.UpdateItemInput, slot controlplane.SlotChange, spend controlplane.SpendChange, id sortie.RunID) ([]types.ConsumedCapacity, error) {
	if slot.Changes() || spend.NanoUSD != 0 {
		return c.updateWithSlots(ctx, in, slot, spend, id)
	}
	out, err := c.db.UpdateItem(ctx, in)
	if err != nil {
		return nil, err
	}
	return capOf(out.ConsumedCapacity), nil
}

// winner returns the run item a lost condition saw, reading it strongly
// consistent when the failure left it out (or sortie.ErrNotFound).
func (c *ControlPlane) winner(ctx context.Context, id sortie.RunID, won item) (item, error) {
	if len(won) > 0 {
		return won, nil
	}
	c.units.fallback()
	it, _, err := c.getRun(ctx, id, true)
	return it, err
}

// ownWrite reports whether stored is the item a write meant to store: the
// same version and body. A write applied by DynamoDB whose answer was lost
// is tried again, and its condition then fails with its own item.
func ownWrite(stored, meant item) bool {
	return valN(stored, AttrVersion) == valN(meant, AttrVersion) && bytes.Equal(valB(stored, AttrBody), valB(meant, AttrBody))
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
	due     int64 // the run's due time then, 0 for nothing due (not part of the condition)
}

func condOf(r *sortie.Run) cond { return cond{r.Version, r.State, r.Attempt, leaseDue(r)} }

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

// nextLeaseKey is the lease index key after a change of a run due at
// oldDue (0: nothing due) with key oldKey to one due at newDue:
//
//   - nothing due any more: the key stays; the reconciler's watermark
//     passes the entry later, instead of a write removing it now;
//   - due again after nothing was (a resumed interrupt), no key yet, or
//     due earlier than the key: the due time (an old key may be below the
//     watermark already);
//   - due later: the key stays, so a heartbeat writes no index; the
//     reconciler moves a key it reaches too early (see Expired).
func nextLeaseKey(oldKey, oldDue, newDue int64) int64 {
	switch {
	case newDue == 0:
		return oldKey
	case oldKey == 0, oldDue == 0, newDue < oldKey:
		return newDue
	}
	return oldKey
}

// keyUnits is what a change of one keys-only index entry costs: an insert
// or a delete writes it once, a moved key twice.
func keyUnits(had, has, moved bool) float64 {
	switch {
	case had && has && moved:
		return 2
	case had != has:
		return 1
	}
	return 0
}

// statePK is the state index partition of r, "" when its state is not rare.
func statePK(r *sortie.Run) string {
	if RareState(r.State) {
		return StatePartition(r.State, shardOf(r.ID))
	}
	return ""
}

// update is one encoded UpdateItem of a run: the record as it will be
// stored, the item after the write, the input and its own units.
type update struct {
	next  *record
	after item
	in    *dynamodb.UpdateItemInput
	own   Capacity
}

// encodeUpdate builds the conditional UpdateItem of rec, read as old. The
// record's units include this write's own, computed from the item sizes
// as DynamoDB bills them (the difference to what DynamoDB reports is
// recorded with the run's next write).
func (c *ControlPlane) encodeUpdate(rec *record, before []bool, old item, pending Capacity, prev cond) (*update, error) {
	keys := indexChanges(old, prev.due, rec.Run)
	own := Capacity{WriteUnits: 1 + keys.units}
	for range 4 {
		next := &record{Run: rec.Run.Clone(), Units: rec.Units.plus(pending).plus(own), Settled: rec.Settled, Ends: rec.Ends}
		settle(next, before)
		body, err := encodeBody(next)
		if err != nil {
			return nil, fmt.Errorf("encode run %s: %w", rec.Run.ID, err)
		}
		set := runAttrs(next, body)
		after := keys.apply(maps.Clone(old), set)
		size := itemSize(after)
		if size > ItemLimitBytes {
			return nil, tooLarge(rec.Run, size)
		}
		need := Capacity{WriteUnits: writeUnits(max(size, itemSize(old))) + keys.units}
		if need == own {
			return &update{next: next, after: after, in: c.updateInput(rec.Run.ID, set, keys, prev), own: own}, nil
		}
		own = need
	}
	return nil, fmt.Errorf("encode run %s: item size does not settle", rec.Run.ID)
}

// tooLarge refuses a run item over DynamoDB's item limit.
func tooLarge(r *sortie.Run, size int) error {
	return &controlplane.TooLargeError{Run: r.ID, Size: size, Limit: ItemLimitBytes, What: "DynamoDB's item limit (400 KB)"}
}

// updateInput is the UpdateItem that stores set and the index keys,
// conditional on the version, state and attempt the run was read at.
func (c *ControlPlane) updateInput(id sortie.RunID, set item, keys indexKeys, prev cond) *dynamodb.UpdateItemInput {
	names := map[string]string{"#b": AttrBody, "#v": AttrVersion, "#st": AttrState, "#at": AttrAttempt}
	values := item{":b": set[AttrBody], ":v": set[AttrVersion], ":st": set[AttrState], ":at": set[AttrAttempt],
		":pv": attrN(prev.version), ":pst": attrS(string(prev.state)), ":pat": attrN(int64(prev.attempt))}
	expr := "SET #b = :b, #v = :v, #st = :st, #at = :at" + keys.expression(names, values)
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
