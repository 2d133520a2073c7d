package dynamo

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

var errUnprocessed = errors.New("DynamoDB left keys unprocessed: throttled")

// LeaseMarginMs is how far below the time Expired is called at a lease
// watermark stays, in ms: more than the index lag and the clock skew
// between the hosts writing leases and the reconciler. Entries above the
// watermark are queried again by each Expired call (those known to be
// passed without reading their runs again).
const LeaseMarginMs = 60_000

// Expired implements [sortie.ControlPlane.Expired] with [IndexLease].
// Every run's entry stays in the index after it ends (removing it would
// cost a write per run); instead each partition has a watermark below
// which every entry is passed: the entry of a run that ended or waits for
// input, or one whose key was moved. Expired queries each partition from
// its watermark up to nowMs, oldest key first, reads the runs (eventually
// consistent; the reconciler's writes are conditional on the version it
// saw) and:
//
//   - returns runs whose lease expired (they hold the watermark);
//   - passes runs with nothing due (their entries are garbage now);
//   - moves the key of a run reached too early (a later lease kept the
//     earlier key, to save index writes) to its lease, with an UpdateItem
//     conditional on its version and key.
//
// Then it raises the watermark to the last key it passed (no further: a
// clock far ahead cannot pass keys not written yet), and at most to nowMs
// - [LeaseMarginMs]. An index key is never later than its run's lease,
// and writes set new keys at or after their own time, so no live run is
// left below a watermark. limit ≤ 0 means
// [controlplane.DefaultExpiredLimit].
func (c *ControlPlane) Expired(ctx context.Context, nowMs int64, limit int) ([]*sortie.Run, error) {
	if err := c.ready("expired"); err != nil {
		return nil, err
	}
	limit = controlplane.ExpiredLimit(limit)
	marks, err := c.watermarks(ctx)
	if err != nil {
		return nil, wrap("expired", err)
	}
	var due []*sortie.Run
	for _, p := range leasePartitions() {
		got, err := c.expiredIn(ctx, p, marks[p], nowMs, limit)
		if err != nil {
			return nil, wrap("expired", err)
		}
		due = append(due, got...)
	}
	slices.SortFunc(due, func(a, b *sortie.Run) int {
		return cmp.Or(cmp.Compare(a.LeaseExpiresMs, b.LeaseExpiresMs), strings.Compare(string(a.ID), string(b.ID)))
	})
	return due[:min(len(due), limit)], nil
}

// scan is one Expired pass over a lease partition: the due runs found,
// the highest key below which every entry read was passed, and whether a
// key that cannot be passed was met.
type scan struct {
	due      []*sortie.Run
	frontier int64
	frozen   bool
	scanned  int
}

// expiredIn scans partition above mark up to nowMs and raises its mark.
func (c *ControlPlane) expiredIn(ctx context.Context, partition string, mark, nowMs int64, limit int) ([]*sortie.Run, error) {
	if mark >= nowMs {
		return nil, nil // a caller's clock behind the one that set the mark: nothing to look at
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(c.table), IndexName: aws.String(IndexLease),
		KeyConditionExpression:    aws.String("#p = :p AND #k BETWEEN :lo AND :now"),
		ExpressionAttributeNames:  map[string]string{"#p": AttrLeasePK, "#k": AttrLease},
		ExpressionAttributeValues: item{":p": attrS(partition), ":lo": attrN(mark + 1), ":now": attrN(nowMs)},
		Limit:                     aws.Int32(int32(limit + 1)),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	}
	s := &scan{frontier: mark}
	p := dynamodb.NewQueryPaginator(c.db, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			c.units.call("", Capacity{})
			return nil, apiErr("query index "+IndexLease, err)
		}
		c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
		if err := c.scanPage(ctx, s, out.Items, nowMs); err != nil {
			return nil, err
		}
		if len(out.Items) > 0 && !needMore(s.due, limit, out.Items, s.scanned) {
			break
		}
	}
	if m := min(s.frontier, nowMs-LeaseMarginMs); m > mark {
		if err := c.advance(ctx, partition, m); err != nil {
			return nil, err
		}
	}
	return s.due, nil
}

// scanPage looks at one page of lease entries in key order.
func (c *ControlPlane) scanPage(ctx context.Context, s *scan, keys []item, nowMs int64) error {
	var unknown []item
	for _, k := range keys {
		if !c.control.isPassed(valS(k, AttrPK), valN(k, AttrLease)) {
			unknown = append(unknown, k)
		}
	}
	recs, err := c.batchGet(ctx, unknown, false)
	if err != nil {
		return err
	}
	for _, k := range keys {
		pk, key := valS(k, AttrPK), valN(k, AttrLease)
		passed, err := c.look(ctx, s, pk, key, recs[pk], nowMs)
		if err != nil {
			return err
		}
		switch {
		case !passed && !s.frozen:
			s.frozen, s.frontier = true, min(s.frontier, key-1)
		case passed && !s.frozen:
			s.frontier = key
		}
		s.scanned++
	}
	return nil
}

// look decides about one lease entry: it reports whether the entry is
// passed, and adds its run to s.due when the lease expired.
func (c *ControlPlane) look(ctx context.Context, s *scan, pk string, key int64, rec *record, nowMs int64) (bool, error) {
	switch {
	case c.control.isPassed(pk, key):
		return true, nil
	case rec == nil: // not readable yet: look again next time
		return false, nil
	case leaseDue(rec.Run) == 0:
		c.control.pass(pk, key)
		return true, nil
	case controlplane.Expired(rec.Run, nowMs):
		s.due = append(s.due, rec.Run)
		return false, nil
	}
	return c.refreshLease(ctx, rec, key)
}

// needMore reports whether Expired must read on: it has fewer than limit
// due runs, or the next index keys may still hold an older lease than the
// limit-th oldest so far (a key is never later than its lease); it stops
// after scanning 10×limit+100 entries of a partition in one call.
func needMore(due []*sortie.Run, limit int, keys []item, scanned int) bool {
	if scanned >= 10*limit+100 {
		return false
	}
	if len(due) < limit {
		return true
	}
	leases := make([]int64, len(due))
	for i, r := range due {
		leases[i] = r.LeaseExpiresMs
	}
	slices.Sort(leases)
	return valN(keys[len(keys)-1], AttrLease) <= leases[limit-1]
}

// refreshLease moves the lease index key of a run the reconciler reached
// too early to the run's lease, conditional on the version and key it
// read; it reports whether the key moved (a lost condition means a writer
// moved on: the entry is looked at again). Its units are recorded on the
// run with this handle's next write of it.
func (c *ControlPlane) refreshLease(ctx context.Context, rec *record, oldKey int64) (bool, error) {
	r := rec.Run
	out, err := c.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(c.table), Key: runKey(r.ID),
		UpdateExpression:          aws.String("SET #ls = :ls, #lk = :new"),
		ConditionExpression:       aws.String("#v = :v AND #lk = :old"),
		ExpressionAttributeNames:  map[string]string{"#v": AttrVersion, "#ls": AttrLeasePK, "#lk": AttrLease},
		ExpressionAttributeValues: item{":v": attrN(r.Version), ":old": attrN(oldKey), ":new": attrN(leaseDue(r)), ":ls": attrS(LeasePartition(shardOf(r.ID)))},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	})
	if _, lost := conditionFailed(err); lost {
		c.units.call(r.ID, Capacity{WriteUnits: 1})
		return false, nil
	}
	if err != nil {
		c.units.call("", Capacity{})
		return false, apiErr("move lease index key of "+string(r.ID), err)
	}
	c.units.call(r.ID, c.units.wrote(capOf(out.ConsumedCapacity)...))
	return true, nil
}

// listLive returns up to want runs in q's state (submitted or working)
// after tok, newest first: every run with a lease is in [IndexLease] above
// its partition's watermark, so List reads those entries and their runs
// (and runs that ended a moment ago, left out) and sorts them.
func (c *ControlPlane) listLive(ctx context.Context, q sortie.ListQuery, tok *controlplane.PageToken, want int) ([]*sortie.Run, error) {
	marks, err := c.watermarks(ctx)
	if err != nil {
		return nil, err
	}
	var keys []item
	for _, part := range leasePartitions() {
		p := dynamodb.NewQueryPaginator(c.db, &dynamodb.QueryInput{
			TableName: aws.String(c.table), IndexName: aws.String(IndexLease),
			KeyConditionExpression:    aws.String("#p = :p AND #k > :mark"),
			ExpressionAttributeNames:  map[string]string{"#p": AttrLeasePK, "#k": AttrLease},
			ExpressionAttributeValues: item{":p": attrS(part), ":mark": attrN(marks[part])},
			ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				c.units.call("", Capacity{})
				return nil, apiErr("query index "+IndexLease, err)
			}
			c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
			for _, k := range out.Items {
				if !c.control.isPassed(valS(k, AttrPK), valN(k, AttrLease)) {
					keys = append(keys, k)
				}
			}
		}
	}
	recs, err := c.batchGet(ctx, keys, true)
	if err != nil {
		return nil, err
	}
	var runs []*sortie.Run
	for _, rec := range recs {
		if r := rec.Run; matches(r, q) && (tok == nil || tok.Follows(r.CreatedMs, r.ID)) {
			runs = append(runs, r)
		}
	}
	slices.SortFunc(runs, func(a, b *sortie.Run) int {
		return cmp.Or(cmp.Compare(b.CreatedMs, a.CreatedMs), strings.Compare(string(b.ID), string(a.ID)))
	})
	return runs[:min(len(runs), want)], nil
}
