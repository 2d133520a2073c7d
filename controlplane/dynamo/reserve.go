package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// Reserve implements [sortie.ControlPlane.Reserve]. With an idempotency
// key it is one TransactWriteItems of the run item and the idempotency
// record, each conditional on being absent (an expired record counts as
// absent). A duplicate is answered from the cancellation reasons with
// ALL_OLD, with no extra read: sortie.ErrIdempotencyConflict when the
// record's request hash differs, otherwise the existing run (created
// false) as the record holds it, at reservation, or as the run item holds
// it when the duplicate carries the same run ID. Without a key it is one
// conditional PutItem. A taken run ID gives sortie.ErrConflict, a run item
// over 400 KB a [*sortie.ValidationError].
func (c *ControlPlane) Reserve(ctx context.Context, res *sortie.Reservation) (*sortie.Run, bool, error) {
	res, err := controlplane.PrepareReservation(res)
	if err != nil {
		return nil, false, err
	}
	if err := c.ready("reserve"); err != nil {
		return nil, false, err
	}
	run := res.Run.Clone()
	controlplane.NewRun(run, res)
	rec := &record{Run: run}
	var got *sortie.Run
	for try := 1; ; try++ {
		got, err = c.reserve(ctx, res, rec)
		if !errors.Is(err, sortie.ErrUnavailable) || try == c.maxTries || ctx.Err() != nil {
			break
		}
		if !pause(ctx, try) {
			break
		}
	}
	if err != nil {
		return nil, false, wrap("reserve", err)
	}
	return got, got == run, nil
}

// pause waits a short, jittered, growing time before another try; it
// reports false when ctx ended first.
func pause(ctx context.Context, try int) bool {
	d := time.Duration(1+rand.IntN(4<<min(try, 6))) * time.Millisecond
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// newRunItem returns the complete item of a new run.
func newRunItem(rec *record) (item, error) {
	body, err := encodeBody(rec)
	if err != nil {
		return nil, fmt.Errorf("encode run %s: %w", rec.Run.ID, err)
	}
	r := rec.Run
	it := runAttrs(rec, body)
	it[AttrPK], it[AttrSK] = attrS(runPK(r.ID)), attrS(runSK)
	it[AttrListPK], it[AttrCreated] = attrS(ListPartition), attrS(createdKey(r.CreatedMs, r.ID))
	if r.ContextID != "" {
		it[AttrContext] = attrS(r.ContextID)
	}
	if due := leaseDue(r); due != 0 {
		it[AttrLeasePK], it[AttrLease] = attrS(LeasePartition), attrN(due)
	}
	return it, nil
}

// idemItem returns the idempotency record of a reservation: the run ID,
// request hash and expiry, the expiry again in seconds for DynamoDB's TTL,
// and the run as reserved (body) to answer duplicates without a read.
func idemItem(res *sortie.Reservation, run item) item {
	exp := res.NowMs + res.TTLMs
	it := keyOf(idemPK(res.Scope, res.Run.IdempotencyKey), idemSK)
	it[AttrRunID] = attrS(string(res.Run.ID))
	it[AttrHash] = attrB([]byte(res.Run.RequestHash))
	it[AttrExpires] = attrN(exp)
	it[AttrTTL] = attrN((exp + 999) / 1000)
	it[AttrBody] = run[AttrBody]
	return it
}

// newIndexWrites counts the index entries a new run item makes.
func newIndexWrites(it item) float64 {
	n := 1.0 // list
	if _, ok := it[AttrContext]; ok {
		n++
	}
	if _, ok := it[AttrLease]; ok {
		n++
	}
	return n
}

// reserve writes the run (and its record) once, with its own units on it.
func (c *ControlPlane) reserve(ctx context.Context, res *sortie.Reservation, rec *record) (*sortie.Run, error) {
	keyed := rec.Run.IdempotencyKey != ""
	rec.Units = Capacity{}
	var runIt, idem item
	for range 4 { // the units are part of the item they pay for
		var err error
		if runIt, err = newRunItem(rec); err != nil {
			return nil, err
		}
		if size := itemSize(runIt); size > ItemLimitBytes {
			return nil, tooLarge(rec.Run, size)
		}
		need := writeUnits(itemSize(runIt)) + newIndexWrites(runIt)
		if keyed {
			idem = idemItem(res, runIt)
			need = 2 * (need + writeUnits(itemSize(idem)))
		}
		if rec.Units.WriteUnits == need {
			break
		}
		rec.Units.WriteUnits = need
	}
	if !keyed {
		return c.putNew(ctx, rec, runIt)
	}
	return c.putKeyed(ctx, res, rec, runIt, idem)
}

// putNew stores a run without an idempotency key.
func (c *ControlPlane) putNew(ctx context.Context, rec *record, it item) (*sortie.Run, error) {
	id := rec.Run.ID
	out, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(c.table), Item: it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		return nil, apiErr("put run "+string(id)+" (is the run ID taken?)", err)
	}
	reported := c.units.wrote(capOf(out.ConsumedCapacity)...)
	c.units.call("", reported)
	c.units.correct(id, reported, rec.Units)
	return rec.Run, nil
}

// putKeyed stores a run and its idempotency record in one transaction, or
// answers a duplicate from the cancellation reasons.
func (c *ControlPlane) putKeyed(ctx context.Context, res *sortie.Reservation, rec *record, runIt, idem item) (*sortie.Run, error) {
	absent := "attribute_not_exists(#pk)"
	names := map[string]string{"#pk": AttrPK}
	out, err := c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(c.table), Item: runIt,
				ConditionExpression: aws.String(absent), ExpressionAttributeNames: names,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
			{Put: &types.Put{TableName: aws.String(c.table), Item: idem,
				ConditionExpression:                 aws.String(absent + " OR #exp <= :now"),
				ExpressionAttributeNames:            map[string]string{"#pk": AttrPK, "#exp": AttrExpires},
				ExpressionAttributeValues:           item{":now": attrN(res.NowMs)},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		return duplicate(res, err)
	}
	reported := c.units.wrote(out.ConsumedCapacity...)
	c.units.call("", reported)
	c.units.correct(rec.Run.ID, reported, rec.Units)
	return rec.Run, nil
}

// duplicate turns a cancelled reservation into its answer: the existing
// run, sortie.ErrIdempotencyConflict, sortie.ErrConflict for a taken run ID
// or sortie.ErrUnavailable for a transaction conflict (to try again).
func duplicate(res *sortie.Reservation, err error) (*sortie.Run, error) {
	var canceled *types.TransactionCanceledException
	if !errors.As(err, &canceled) || hasReason(canceled, reasonConflict) {
		return nil, apiErr("reserve run "+string(res.Run.ID), err)
	}
	runCode, runOld := reason(canceled, 0)
	idemCode, idemOld := reason(canceled, 1)
	key, scope := res.Run.IdempotencyKey, res.Scope
	switch {
	case idemCode == reasonConditionFailed && len(idemOld) > 0:
		// The hash is checked on every duplicate, whatever else the reasons say.
		if string(valB(idemOld, AttrHash)) != res.Run.RequestHash {
			return nil, fmt.Errorf("reserve key %q in scope %q: %w", key, scope, sortie.ErrIdempotencyConflict)
		}
		holder := idemOld
		if runCode == reasonConditionFailed && valS(runOld, AttrPK) == runPK(sortie.RunID(valS(idemOld, AttrRunID))) {
			holder = runOld // the same run ID again: its current state came back too
		}
		got, err := decodeRecord(holder)
		if err != nil {
			return nil, err
		}
		return got.Run, nil
	case runCode == reasonConditionFailed:
		return nil, fmt.Errorf("reserve run %s: the run ID is taken: %w", res.Run.ID, sortie.ErrConflict)
	}
	return nil, apiErr("reserve run "+string(res.Run.ID), err)
}
