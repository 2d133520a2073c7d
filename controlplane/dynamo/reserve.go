package dynamo

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// Reserve implements [sortie.ControlPlane.Reserve] without a transaction:
// with an idempotency key it puts the idempotency record first
// (conditional on the key being free or its record expired) and then the
// run item (conditional on the run ID being free). The record holds the
// run as reserved, so the pair heals itself: a duplicate that finds the
// record but not the run (the first call stopped between the two puts)
// stores the run from the record. A duplicate compares the request hash
// first (sortie.ErrIdempotencyConflict when it differs), then reads the
// run strongly consistent and returns it (created false). The record that
// holds the key comes from the lost condition (ALL_OLD), or from a
// strongly consistent GetItem when DynamoDB leaves it out. Without a key
// Reserve is one conditional PutItem. A taken run ID gives
// sortie.ErrConflict, a run item over 400 KB a [*sortie.ValidationError].
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
	runIt, idem, err := newItems(res, rec, writeToken())
	if err == nil {
		err = c.registerAgent(ctx, run.Agent.Name)
	}
	if err != nil {
		return nil, false, wrap("reserve", err)
	}
	if idem == nil {
		if err := c.checkSpend(ctx, res.SpendLimit); err != nil {
			return nil, false, wrap("reserve", err)
		}
		if _, err := c.putNew(ctx, rec, runIt, 0); err != nil {
			return nil, false, wrap("reserve", err)
		}
		c.hub.Notify(run.ID)
		return run, true, nil
	}
	got, created, err := c.reserveKeyed(ctx, res, rec, runIt, idem)
	if created {
		c.hub.Notify(got.ID)
	}
	return got, created, wrap("reserve", err)
}

// pause waits a short, jittered, growing time before another try; it
// reports false when ctx ended first.
func pause(ctx context.Context, try int) bool {
	d := time.Duration(1+mrand.IntN(4<<min(try, 6))) * time.Millisecond
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
	shard := shardOf(r.ID)
	it := runAttrs(rec, body)
	it[AttrPK], it[AttrSK] = attrS(runPK(r.ID)), attrS(runSK)
	it[AttrListPK], it[AttrCreated] = attrS(ListPartition(r.Agent.Name, shard)), attrS(createdKey(r.CreatedMs, r.ID))
	if r.ContextID != "" {
		it[AttrContext] = attrS(r.ContextID)
	}
	if due := leaseDue(r); due != 0 {
		it[AttrLeasePK], it[AttrLease] = attrS(LeasePartition(shard)), attrN(newLeaseKey(r))
	}
	if sp := statePK(r); sp != "" {
		it[AttrStatePK] = attrS(sp)
	}
	return it, nil
}

// newLeaseKey is a new run's lease index key: its due time, but at most
// the launch grace after its creation, so that the shorter lease of the
// claim that usually follows keeps the key (a key may be earlier than the
// lease; the reconciler moves one it reaches too early, which a run that
// ends within the grace never costs).
func newLeaseKey(r *sortie.Run) int64 {
	return min(leaseDue(r), r.CreatedMs+controlplane.LaunchGraceMs)
}

// idemItem returns the idempotency record of a reservation: the run ID,
// request hash and expiry, the expiry again in seconds for DynamoDB's TTL,
// and the run as reserved (body), from which a duplicate stores the run
// when the first call stopped before it did.
func idemItem(res *sortie.Reservation, run item) item {
	exp := res.NowMs + res.TTLMs
	it := keyOf(idemPK(res.Scope, res.Run.IdempotencyKey), idemSK)
	it[AttrRunID] = attrS(string(res.Run.ID))
	it[AttrHash] = attrB([]byte(res.Run.RequestHash))
	it[AttrExpires] = attrN(exp)
	it[AttrTTL] = attrN((exp + 999) / 1000)
	it[AttrBody], it[AttrToken] = run[AttrBody], run[AttrToken]
	return it
}

// newIndexWrites counts the index entries a new run item makes.
func newIndexWrites(it item) float64 {
	n := 1.0 // list
	for _, a := range []string{AttrContext, AttrLease, AttrStatePK} {
		if _, ok := it[a]; ok {
			n++
		}
	}
	return n
}

// writeToken returns 8 random bytes that mark the items one Reserve call
// puts: a lost condition whose item carries them is this call's own put,
// applied by a try whose answer was lost.
func writeToken() []byte {
	b := make([]byte, 8)
	rand.Read(b)
	return b
}

// newItems returns the run item (with its own units on it: the two puts
// and their index entries) and, with an idempotency key, its record, both
// marked with token.
func newItems(res *sortie.Reservation, rec *record, token []byte) (runIt, idem item, err error) {
	keyed := rec.Run.IdempotencyKey != ""
	for range 4 { // the units are part of the item they pay for
		if runIt, err = newRunItem(rec); err != nil {
			return nil, nil, err
		}
		runIt[AttrToken] = attrB(token)
		if size := itemSize(runIt); size > ItemLimitBytes {
			return nil, nil, tooLarge(rec.Run, size)
		}
		need := writeUnits(itemSize(runIt)) + newIndexWrites(runIt)
		if keyed {
			idem = idemItem(res, runIt)
			need += writeUnits(itemSize(idem))
		}
		if rec.Units.WriteUnits == need {
			break
		}
		rec.Units.WriteUnits = need
	}
	return runIt, idem, nil
}

// putRun stores a new run item, conditional on its key being free; spent
// is what the idempotency record's put reported. A lost condition whose
// item is this one (the put was applied, its answer lost) is success;
// another run under the ID is sortie.ErrConflict.
func (c *ControlPlane) putRun(ctx context.Context, rec *record, it item, spent float64) (*sortie.Run, error) {
	id := rec.Run.ID
	out, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(c.table), Item: it,
		ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": AttrPK},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		won, lost := conditionFailed(err)
		if !lost {
			return nil, apiErr("put run "+string(id), err)
		}
		cause := err
		if won, err = c.winner(ctx, id, won); err != nil && !errors.Is(err, sortie.ErrNotFound) {
			return nil, err
		}
		if !sameToken(won, it) {
			return nil, fmt.Errorf("reserve run %s: the run ID is taken: %w: %w", id, sortie.ErrConflict, cause)
		}
	} else {
		reported := c.units.wrote(capOf(out.ConsumedCapacity)...)
		c.units.call("", reported)
		c.units.correct(id, reported.plus(Capacity{WriteUnits: spent}), rec.Units)
	}
	c.cache.put(id, it)
	return rec.Run, nil
}

// reserveKeyed stores the record and then the run, or answers a duplicate.
func (c *ControlPlane) reserveKeyed(ctx context.Context, res *sortie.Reservation, rec *record, runIt, idem item) (*sortie.Run, bool, error) {
	holder, spent, err := c.putIdem(ctx, res, idem)
	if err != nil {
		return nil, false, err
	}
	if holder == nil {
		if err := c.checkSpend(ctx, res.SpendLimit); err != nil {
			c.dropIdem(ctx, res) // the key must not point at a run never stored
			return nil, false, err
		}
		run, err := c.putNew(ctx, rec, runIt, spent)
		if errors.Is(err, sortie.ErrConflict) {
			c.dropIdem(ctx, res) // the key must not point at another run
		}
		return run, err == nil, err
	}
	if string(valB(holder, AttrHash)) != res.Run.RequestHash {
		return nil, false, fmt.Errorf("reserve key %q in scope %q: %w", res.Run.IdempotencyKey, res.Scope, sortie.ErrIdempotencyConflict)
	}
	run, healed, err := c.existing(ctx, holder)
	// This call's own record (a try applied, its answer lost) and the run
	// stored from it now: this call created the run.
	return run, healed && sameToken(holder, idem), err
}

// sameToken reports whether stored carries the write token of meant.
func sameToken(stored, meant item) bool {
	return len(valB(meant, AttrToken)) > 0 && bytes.Equal(valB(stored, AttrToken), valB(meant, AttrToken))
}

// putIdem puts the record, conditional on the key being free or its record
// expired at the reservation's time. It returns nil when this put stored
// the record, and the units it reported, or the unexpired record that
// holds the key (this call's own, when a try was applied but its answer
// lost).
func (c *ControlPlane) putIdem(ctx context.Context, res *sortie.Reservation, idem item) (item, float64, error) {
	for try := 1; ; try++ {
		out, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(c.table), Item: idem,
			ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR #exp <= :now"),
			ExpressionAttributeNames:            map[string]string{"#pk": AttrPK, "#exp": AttrExpires},
			ExpressionAttributeValues:           item{":now": attrN(res.NowMs)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes,
		})
		if err == nil {
			reported := c.units.wrote(capOf(out.ConsumedCapacity)...)
			c.units.call("", reported)
			return nil, reported.WriteUnits, nil
		}
		c.units.call("", Capacity{WriteUnits: 1}) // a lost condition is billed too
		holder, lost := conditionFailed(err)
		if !lost {
			return nil, 0, apiErr("reserve key "+res.Run.IdempotencyKey, err)
		}
		if holder, err = c.readIdem(ctx, res, holder); err != nil {
			return nil, 0, err
		}
		if len(holder) > 0 && (valN(holder, AttrExpires) > res.NowMs || sameToken(holder, idem)) {
			return holder, 0, nil
		}
		if try == c.maxTries || !pause(ctx, try) {
			return nil, 0, fmt.Errorf("reserve key %q: the record kept changing: %w", res.Run.IdempotencyKey, sortie.ErrUnavailable)
		}
		// The record expired or went away since the condition failed: put again.
	}
}

// readIdem returns held, the record a lost condition returned, or, when
// DynamoDB left it out, the record read strongly consistent (empty when
// there is none).
func (c *ControlPlane) readIdem(ctx context.Context, res *sortie.Reservation, held item) (item, error) {
	if len(held) > 0 {
		return held, nil
	}
	c.units.fallback()
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.table), Key: keyOf(idemPK(res.Scope, res.Run.IdempotencyKey), idemSK),
		ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	if err != nil {
		c.units.call("", Capacity{})
		return nil, apiErr("read the record of key "+res.Run.IdempotencyKey, err)
	}
	c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
	return out.Item, nil
}

// existing returns the run a record reserved, strongly consistent; when
// the run item is missing (its reservation stopped between the two puts)
// it stores the run as the record holds it and reports healed.
func (c *ControlPlane) existing(ctx context.Context, holder item) (*sortie.Run, bool, error) {
	id := sortie.RunID(valS(holder, AttrRunID))
	_, rec, err := c.getRun(ctx, id, false)
	if !errors.Is(err, sortie.ErrNotFound) {
		if err != nil {
			return nil, false, err
		}
		return rec.Run, false, nil
	}
	if rec, err = decodeRecord(holder); err != nil {
		return nil, false, err
	}
	it, err := newRunItem(rec)
	if err != nil {
		return nil, false, err
	}
	it[AttrToken] = holder[AttrToken]
	run, err := c.putNew(ctx, rec, it, 0)
	if !errors.Is(err, sortie.ErrConflict) {
		return run, err == nil, err
	}
	_, rec, err = c.getRun(ctx, id, false) // another duplicate stored it first
	if err != nil {
		return nil, false, err
	}
	return rec.Run, false, nil
}

// dropIdem deletes the record this reservation just put, when its run ID
// turned out to be taken; it is best effort (the record expires anyway).
func (c *ControlPlane) dropIdem(ctx context.Context, res *sortie.Reservation) {
	_, err := c.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(c.table), Key: keyOf(idemPK(res.Scope, res.Run.IdempotencyKey), idemSK),
		ConditionExpression:       aws.String("#rid = :rid"),
		ExpressionAttributeNames:  map[string]string{"#rid": AttrRunID},
		ExpressionAttributeValues: item{":rid": attrS(string(res.Run.ID))},
	})
	c.units.call("", Capacity{WriteUnits: 1})
	_ = err
}
