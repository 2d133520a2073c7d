package dynamo

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// Get implements [sortie.ControlPlane.Get] with a strongly consistent
// GetItem: sortie.ErrNotFound for an unknown run, a
// [*sortie.ValidationError] for a malformed ID.
func (c *ControlPlane) Get(ctx context.Context, id sortie.RunID) (*sortie.Run, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if err := c.ready("get"); err != nil {
		return nil, err
	}
	_, rec, err := c.getRun(ctx, id, false)
	if err != nil {
		return nil, wrap("get", err)
	}
	return rec.Run, nil
}

// List implements [sortie.ControlPlane.List]: newest first (created_ms,
// then ID, descending). It queries the context index when q names a
// context and the list index otherwise (both keys only), reads the runs
// with a strongly consistent BatchGetItem and filters them by state and
// agent. Page tokens are signed (see [Options.PageTokenKey]); a malformed
// query or token gives a [*sortie.ValidationError]. Indexes are
// eventually consistent: a run reserved a moment ago may be missing.
func (c *ControlPlane) List(ctx context.Context, q sortie.ListQuery) (*sortie.RunPage, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	tok, err := c.verifyToken(q)
	if err != nil {
		return nil, err
	}
	if err := c.ready("list"); err != nil {
		return nil, err
	}
	size := controlplane.PageSize(q)
	var runs []*sortie.Run
	err = c.queryIndex(ctx, listInput(c.table, q, tok, size+1), func(keys []item, recs map[string]*record) bool {
		for _, k := range keys {
			rec := recs[valS(k, AttrPK)]
			if rec == nil {
				continue
			}
			r := rec.Run
			if (q.State == "" || r.State == q.State) && (q.Agent == "" || r.Agent.Name == q.Agent) {
				runs = append(runs, r)
			}
		}
		return len(runs) <= size
	})
	if err != nil {
		return nil, wrap("list", err)
	}
	page := &sortie.RunPage{Runs: runs}
	if len(runs) > size {
		page.Runs = runs[:size]
		page.NextPageToken = c.signToken(q, controlplane.TokenAfter(runs[size-1]))
	}
	return page, nil
}

// listInput is the index Query of a List page.
func listInput(table string, q sortie.ListQuery, tok *controlplane.PageToken, limit int) *dynamodb.QueryInput {
	index, pkName, pk := IndexList, AttrListPK, ListPartition
	if q.ContextID != "" {
		index, pkName, pk = IndexContext, AttrContext, q.ContextID
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(table), IndexName: aws.String(index),
		KeyConditionExpression:    aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": pkName},
		ExpressionAttributeValues: item{":p": attrS(pk)},
		ScanIndexForward:          aws.Bool(false), Limit: aws.Int32(int32(limit)),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	}
	if tok != nil {
		in.KeyConditionExpression = aws.String("#p = :p AND #ck < :ck")
		in.ExpressionAttributeNames["#ck"] = AttrCreated
		in.ExpressionAttributeValues[":ck"] = attrS(createdKey(tok.CreatedMs, tok.ID))
	}
	return in
}

// queryIndex pages through an index Query and hands each page's keys, in
// index order, and the runs they point to (by partition key) to each until
// it returns false.
func (c *ControlPlane) queryIndex(ctx context.Context, in *dynamodb.QueryInput, each func(keys []item, recs map[string]*record) bool) error {
	p := dynamodb.NewQueryPaginator(c.db, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			c.units.call("", Capacity{})
			return apiErr("query index "+aws.ToString(in.IndexName), err)
		}
		c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
		recs, err := c.batchGet(ctx, out.Items)
		if err != nil {
			return err
		}
		if !each(out.Items, recs) {
			return nil
		}
	}
	return nil
}

// batchGet reads the run items the index items point to, strongly
// consistent, by partition key; runs missing from the table are left out.
func (c *ControlPlane) batchGet(ctx context.Context, keys []item) (map[string]*record, error) {
	found := map[string]*record{}
	for chunk := range slices.Chunk(keys, 100) {
		req := make([]item, len(chunk))
		for i, k := range chunk {
			req[i] = keyOf(valS(k, AttrPK), valS(k, AttrSK))
		}
		if err := c.batchGetChunk(ctx, req, found); err != nil {
			return nil, err
		}
	}
	return found, nil
}

func (c *ControlPlane) batchGetChunk(ctx context.Context, keys []item, found map[string]*record) error {
	for try := 1; len(keys) > 0; try++ {
		out, err := c.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems:           map[string]types.KeysAndAttributes{c.table: {Keys: keys, ConsistentRead: aws.Bool(true)}},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
		})
		if err != nil {
			c.units.call("", Capacity{})
			return apiErr("batch get runs", err)
		}
		c.units.call("", Capacity{ReadUnits: sum(out.ConsumedCapacity...)})
		for _, it := range out.Responses[c.table] {
			rec, err := decodeRecord(it)
			if err != nil {
				return err
			}
			found[valS(it, AttrPK)] = rec
		}
		keys = out.UnprocessedKeys[c.table].Keys
		if len(keys) > 0 && (try == c.maxTries || !pause(ctx, try)) {
			return apiErr("batch get runs", errUnprocessed)
		}
	}
	return nil
}

// Expired implements [sortie.ControlPlane.Expired] with the sparse lease
// index: it queries keys at or before nowMs, oldest first, and reads the
// runs. An index key is never later than its run's lease but may be
// earlier (changes that extend a lease keep the key, to save index
// writes); Expired moves such a key to the run's lease, or out of the
// index, with an UpdateItem conditional on the run's version, and leaves
// the run out. limit ≤ 0 means [controlplane.DefaultExpiredLimit].
func (c *ControlPlane) Expired(ctx context.Context, nowMs int64, limit int) ([]*sortie.Run, error) {
	if err := c.ready("expired"); err != nil {
		return nil, err
	}
	limit = controlplane.ExpiredLimit(limit)
	var due []*sortie.Run
	scanned := 0
	in := &dynamodb.QueryInput{
		TableName: aws.String(c.table), IndexName: aws.String(IndexLease),
		KeyConditionExpression:    aws.String("#p = :p AND #k <= :now"),
		ExpressionAttributeNames:  map[string]string{"#p": AttrLeasePK, "#k": AttrLease},
		ExpressionAttributeValues: item{":p": attrS(LeasePartition), ":now": attrN(nowMs)},
		Limit:                     aws.Int32(int32(limit + 1)),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	}
	var refreshErr error
	err := c.queryIndex(ctx, in, func(keys []item, recs map[string]*record) bool {
		for _, k := range keys {
			rec := recs[valS(k, AttrPK)]
			if rec == nil {
				continue
			}
			if controlplane.Expired(rec.Run, nowMs) {
				due = append(due, rec.Run)
			} else if err := c.refreshLease(ctx, rec, valN(k, AttrLease)); err != nil && refreshErr == nil {
				refreshErr = err
			}
			scanned++
		}
		return needMore(due, limit, keys, scanned)
	})
	if err == nil {
		err = refreshErr
	}
	if err != nil {
		return nil, wrap("expired", err)
	}
	slices.SortFunc(due, func(a, b *sortie.Run) int {
		return cmp.Or(cmp.Compare(a.LeaseExpiresMs, b.LeaseExpiresMs), strings.Compare(string(a.ID), string(b.ID)))
	})
	return due[:min(len(due), limit)], nil
}

// needMore reports whether Expired must read on: it has fewer than limit
// due runs, or the next index keys may still hold an older lease than the
// limit-th oldest so far (a key is never later than its lease); it stops
// after scanning 10×limit+100 runs in one call.
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
