package dynamostream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/sortie-run/sortie"
)

// API is the part of the DynamoDB Streams client a [Watcher] uses;
// *dynamodbstreams.Client implements it.
type API interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

var _ API = (*dynamodbstreams.Client)(nil)

// Target is what a [Watcher] wakes: *dynamo.ControlPlane.
type Target interface {
	// Changed wakes the subscribers of run id, whose run item or events
	// changed.
	Changed(id sortie.RunID)
}

// Options configures [New]. A nil *Options means the defaults.
type Options struct {
	// PollInterval is how often each shard is read while anyone follows.
	// Optional; defaults to 1 s.
	PollInterval time.Duration
	// ShardRefresh is how often the stream's shards are listed again (a
	// closed shard lists them at once). Optional; defaults to 30 s.
	ShardRefresh time.Duration
	// Logger receives read failures. Optional; defaults to slog.Default().
	Logger *slog.Logger
}

// Watcher reads a table's stream and wakes a [Target]'s subscribers; see
// the package documentation. Make it with [New] and run [Watcher.Run].
type Watcher struct {
	api    API
	arn    string
	target Target
	o      Options
	calls  atomic.Int64
	shards map[string]*shard // used by Run's goroutine only
	listed time.Time
}

// shard is one shard being read: its iterator, "" once it closed.
type shard struct {
	iter   string
	closed bool
}

// New returns a watcher of the stream streamARN ([StreamARN]) that wakes
// target. It returns a [*sortie.ValidationError] for a missing argument.
func New(api API, streamARN string, target Target, opts *Options) (*Watcher, error) {
	if api == nil || streamARN == "" || target == nil {
		return nil, sortie.Invalidf("stream", "a Streams client, a stream ARN and a target are required")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.ShardRefresh <= 0 {
		o.ShardRefresh = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Watcher{api: api, arn: streamARN, target: target, o: o}, nil
}

// Calls returns how many Streams requests the watcher made.
func (w *Watcher) Calls() int64 { return w.calls.Load() }

// Run reads the stream from its newest records until ctx ends, and
// returns ctx.Err(). It reads whether or not anyone follows, so a new
// follower misses no change made after it subscribed.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.o.PollInterval)
	defer t.Stop()
	for {
		if err := w.poll(ctx); err != nil && ctx.Err() == nil {
			w.o.Logger.Warn("dynamostream: read the stream; followers poll meanwhile", "error", err)
			w.shards = nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// poll reads every open shard once, listing the shards first when due.
func (w *Watcher) poll(ctx context.Context) error {
	if w.shards == nil || time.Since(w.listed) >= w.o.ShardRefresh {
		if err := w.list(ctx); err != nil {
			return err
		}
	}
	relist := false
	for id, s := range w.shards {
		if s.closed {
			continue
		}
		if err := w.read(ctx, id, s); err != nil {
			return err
		}
		relist = relist || s.closed
	}
	if relist {
		w.listed = time.Time{} // a closed shard has children: list them next time
	}
	return nil
}

// read reads one page of a shard's records and wakes their runs.
func (w *Watcher) read(ctx context.Context, id string, s *shard) error {
	w.calls.Add(1)
	out, err := w.api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(s.iter), Limit: aws.Int32(1000)})
	var expired *types.ExpiredIteratorException
	if errors.As(err, &expired) {
		delete(w.shards, id) // listed again next time, from the newest record
		w.listed = time.Time{}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get records of shard %s: %w", id, err)
	}
	for _, r := range out.Records {
		if id, ok := runChanged(r); ok {
			w.target.Changed(id)
		}
	}
	if out.NextShardIterator == nil {
		s.closed = true
		return nil
	}
	s.iter = *out.NextShardIterator
	return nil
}

// runChanged returns the run a record changed: a record of its run item
// (sort key RUN) or of one of its event batches (EVT#…); push
// configurations' and control items' records change no run.
func runChanged(r types.Record) (sortie.RunID, bool) {
	if r.Dynamodb == nil {
		return "", false
	}
	pk, _ := r.Dynamodb.Keys["pk"].(*types.AttributeValueMemberS)
	sk, _ := r.Dynamodb.Keys["sk"].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil || (sk.Value != "RUN" && !strings.HasPrefix(sk.Value, "EVT#")) {
		return "", false
	}
	run, ok := strings.CutPrefix(pk.Value, "RUN#")
	return sortie.RunID(run), ok
}

// list lists the stream's shards and opens an iterator on each new one:
// at its oldest record when its parent was being read (nothing between
// them is lost), else at its newest.
func (w *Watcher) list(ctx context.Context) error {
	if w.shards == nil {
		w.shards = map[string]*shard{}
	}
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(w.arn)}
	for {
		w.calls.Add(1)
		out, err := w.api.DescribeStream(ctx, in)
		if err != nil {
			return fmt.Errorf("describe stream: %w", err)
		}
		for _, sh := range out.StreamDescription.Shards {
			if err := w.open(ctx, sh); err != nil {
				return err
			}
		}
		if in.ExclusiveStartShardId = out.StreamDescription.LastEvaluatedShardId; in.ExclusiveStartShardId == nil {
			break
		}
	}
	w.listed = time.Now()
	return nil
}

// open starts reading shard sh unless it is known or closed before the
// watcher read its parent.
func (w *Watcher) open(ctx context.Context, sh types.Shard) error {
	id := aws.ToString(sh.ShardId)
	if _, known := w.shards[id]; known {
		return nil
	}
	_, parentRead := w.shards[aws.ToString(sh.ParentShardId)]
	closed := sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil
	if closed && !parentRead {
		return nil // ended before this watcher looked: nothing to wake for
	}
	kind := types.ShardIteratorTypeLatest
	if parentRead {
		kind = types.ShardIteratorTypeTrimHorizon
	}
	w.calls.Add(1)
	out, err := w.api.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(w.arn),
		ShardId: aws.String(id), ShardIteratorType: kind})
	if err != nil {
		return fmt.Errorf("open shard %s: %w", id, err)
	}
	w.shards[id] = &shard{iter: aws.ToString(out.ShardIterator)}
	return nil
}

// TableAPI is the part of the DynamoDB client [StreamARN] uses.
type TableAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// StreamARN returns the ARN of table's stream, or an error naming the
// table when it has none (a table made before the stream was part of its
// definition: the terraform module adds it in place).
func StreamARN(ctx context.Context, db TableAPI, table string) (string, error) {
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("dynamostream: describe table %s: %w", table, err)
	}
	if out.Table.StreamSpecification == nil || !aws.ToBool(out.Table.StreamSpecification.StreamEnabled) || out.Table.LatestStreamArn == nil {
		return "", fmt.Errorf("dynamostream: table %s has no stream (apply terraform/aws, which enables one in place)", table)
	}
	return *out.Table.LatestStreamArn, nil
}
