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
// then ID, descending), from the index that holds what q asks for:
//
//   - a context: [IndexContext]'s partition of it;
//   - a [RareState] (failed, cancelled, rejected, input-required,
//     auth-required): [IndexState]'s shards of that state, so only runs in
//     it are read;
//   - submitted or working: the live runs, from [IndexLease] above its
//     watermarks (runs that ended a moment ago are read and left out);
//   - an agent: [IndexList]'s shards of that agent;
//   - anything else (every run, or completed, the state most runs end
//     in): the shards of every agent in the registry.
//
// The index partitions are queried newest first and merged; the runs are
// read with a strongly consistent BatchGetItem and the other filters
// applied to them. Partitions of tables made before the sharded indexes
// are read too. Page tokens are signed (see [Options.PageTokenKey]); a
// malformed query or token gives a [*sortie.ValidationError]. Indexes are
// eventually consistent: a run reserved a moment ago may be missing.
func (c *ControlPlane) List(ctx context.Context, q sortie.ListQuery) (*sortie.RunPage, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	tok, err := c.tokens.ListPosition(q)
	if err != nil {
		return nil, err
	}
	if err := c.ready("list"); err != nil {
		return nil, err
	}
	size := controlplane.PageSize(q)
	var runs []*sortie.Run
	if q.ContextID == "" && (q.State == sortie.StateSubmitted || q.State == sortie.StateWorking) {
		runs, err = c.listLive(ctx, q, tok, size+1)
	} else {
		var srcs []source
		if srcs, err = c.listSources(ctx, q); err == nil {
			runs, err = c.merge(ctx, srcs, tok, size+1, func(r *sortie.Run) bool { return matches(r, q) })
		}
	}
	if err != nil {
		return nil, wrap("list", err)
	}
	page := &sortie.RunPage{Runs: runs}
	if len(runs) > size {
		page.Runs = runs[:size]
		page.NextPageToken = c.tokens.ListToken(q, runs[size-1])
	}
	return page, nil
}

// matches reports whether r passes q's state and agent filters.
func matches(r *sortie.Run, q sortie.ListQuery) bool {
	return (q.State == "" || r.State == q.State) && (q.Agent == "" || r.Agent.Name == q.Agent)
}

// source is one index partition a list reads.
type source struct{ index, pkName, pk string }

// listSources returns the index partitions that hold every run q asks for.
func (c *ControlPlane) listSources(ctx context.Context, q sortie.ListQuery) ([]source, error) {
	if q.ContextID != "" {
		return []source{{IndexContext, AttrContext, q.ContextID}}, nil
	}
	legacy := source{IndexList, AttrListPK, legacyListPartition}
	if RareState(q.State) {
		out := []source{legacy}
		for s := range IndexShards {
			out = append(out, source{IndexState, AttrStatePK, StatePartition(q.State, s)})
		}
		return out, nil
	}
	agents := []string{q.Agent}
	if q.Agent == "" {
		var err error
		if agents, err = c.agents(ctx); err != nil {
			return nil, err
		}
	}
	out := []source{legacy}
	for _, a := range agents {
		for s := range IndexShards {
			out = append(out, source{IndexList, AttrListPK, ListPartition(a, s)})
		}
	}
	return out, nil
}

// pager reads one source newest first, a page at a time.
type pager struct {
	in   *dynamodb.QueryInput
	buf  []item
	done bool
}

// head returns the pager's next key, reading a page when its buffer is
// empty; nil when the source has no more.
func (c *ControlPlane) head(ctx context.Context, p *pager) (item, error) {
	for len(p.buf) == 0 && !p.done {
		out, err := c.db.Query(ctx, p.in)
		if err != nil {
			c.units.call("", Capacity{})
			return nil, apiErr("query index "+aws.ToString(p.in.IndexName), err)
		}
		c.units.call("", Capacity{ReadUnits: sum(capOf(out.ConsumedCapacity)...)})
		p.buf, p.in.ExclusiveStartKey, p.done = out.Items, out.LastEvaluatedKey, len(out.LastEvaluatedKey) == 0
	}
	if len(p.buf) == 0 {
		return nil, nil
	}
	return p.buf[0], nil
}

// merge reads the sources newest first after tok, merged in (created_ms,
// ID) order, and returns up to want runs that match, each once.
func (c *ControlPlane) merge(ctx context.Context, srcs []source, tok *controlplane.PageToken, want int, match func(*sortie.Run) bool) ([]*sortie.Run, error) {
	pagers := make([]*pager, len(srcs))
	for i, s := range srcs {
		pagers[i] = &pager{in: indexQuery(c.table, s, tok, want)}
	}
	var runs []*sortie.Run
	seen := map[string]bool{}
	for len(runs) < want {
		keys, err := c.newest(ctx, pagers, min(100, want-len(runs)))
		if err != nil || len(keys) == 0 {
			return runs, err
		}
		recs, err := c.batchGet(ctx, keys, true)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			pk := valS(k, AttrPK)
			if rec := recs[pk]; rec != nil && !seen[pk] && match(rec.Run) && len(runs) < want {
				seen[pk] = true
				runs = append(runs, rec.Run)
			}
		}
	}
	return runs, nil
}

// newest takes up to n keys off the pagers, newest first.
func (c *ControlPlane) newest(ctx context.Context, pagers []*pager, n int) ([]item, error) {
	var keys []item
	for len(keys) < n {
		var best *pager
		var bestKey string
		for _, p := range pagers {
			k, err := c.head(ctx, p)
			if err != nil {
				return nil, err
			}
			if k != nil && (best == nil || valS(k, AttrCreated) > bestKey) {
				best, bestKey = p, valS(k, AttrCreated)
			}
		}
		if best == nil {
			break
		}
		keys, best.buf = append(keys, best.buf[0]), best.buf[1:]
	}
	return keys, nil
}

// indexQuery is the newest-first Query of one source after tok.
func indexQuery(table string, s source, tok *controlplane.PageToken, limit int) *dynamodb.QueryInput {
	in := &dynamodb.QueryInput{
		TableName: aws.String(table), IndexName: aws.String(s.index),
		KeyConditionExpression:    aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": s.pkName},
		ExpressionAttributeValues: item{":p": attrS(s.pk)},
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

// batchGet reads the run items the index items point to, by partition
// key, strongly consistent when consistent is set; runs missing from the
// table are left out.
func (c *ControlPlane) batchGet(ctx context.Context, keys []item, consistent bool) (map[string]*record, error) {
	found := map[string]*record{}
	for chunk := range slices.Chunk(keys, 100) {
		req, dup := make([]item, 0, len(chunk)), map[string]bool{}
		for _, k := range chunk {
			if pk := valS(k, AttrPK); !dup[pk] {
				dup[pk] = true
				req = append(req, keyOf(pk, valS(k, AttrSK)))
			}
		}
		if err := c.batchGetChunk(ctx, req, consistent, found); err != nil {
			return nil, err
		}
	}
	return found, nil
}

func (c *ControlPlane) batchGetChunk(ctx context.Context, keys []item, consistent bool, found map[string]*record) error {
	for try := 1; len(keys) > 0; try++ {
		out, err := c.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems:           map[string]types.KeysAndAttributes{c.table: {Keys: keys, ConsistentRead: aws.Bool(consistent)}},
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
