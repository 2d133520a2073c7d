package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
)

// Attribute names of the single table. They are short because every byte
// of an item counts against its write units. Every timestamp attribute is
// an integer in Unix ms, except [AttrTTL] (Unix seconds, read only by
// DynamoDB's TTL, never compared by this package).
const (
	AttrPK      = "pk"  // S: partition key: RUN#<id> or IDEM#…
	AttrSK      = "sk"  // S: sort key: RUN, IDEM, EVT#<attempt:4>#<seq:10>, PUSH, PUSH#<config id> or STEP#<step name>
	AttrBody    = "b"   // B: the compressed JSON record (run, usage, event ends) or event batch
	AttrVersion = "v"   // N: the run's Version
	AttrState   = "st"  // S: the run's State
	AttrAttempt = "at"  // N: the run's current attempt number
	AttrListPK  = "lp"  // S: list index partition of every run: A#<agent>#<shard> ([ListPartition])
	AttrCreated = "ck"  // S: created_ms zero-padded to 15 digits, '#', run ID (list, context and state sort key)
	AttrContext = "cx"  // S: the run's context ID, absent when empty (context index partition)
	AttrStatePK = "sp"  // S: state index partition S#<state>#<shard> while the run is in a [RareState], else absent
	AttrLeasePK = "ls"  // S: lease index partition L#<shard> ([LeasePartition]), set at reservation and kept
	AttrLease   = "lk"  // N: lease index key, Unix ms: never later than the lease of a run with one (see [Expired])
	AttrEndedPK = "ep"  // S: ended index partition E#<shard> ([EndedPartition]) while the run is terminal, else absent
	AttrEnded   = "ek"  // N: ended index key: the terminal run's UpdatedMs, Unix ms
	AttrRunID   = "rid" // S: idempotency record: the run it reserved
	AttrHash    = "h"   // B: idempotency record: the request hash
	AttrExpires = "exp" // N: idempotency record: expiry, Unix ms
	AttrTTL     = "ttl" // N: idempotency record: expiry rounded up to Unix seconds, for DynamoDB TTL
	AttrToken   = "wt"  // B: run item and idempotency record: 8 random bytes of the Reserve call that put it

	AttrURL       = "u"   // S: push config: the webhook URL
	AttrKeyID     = "kid" // S: push config: the signing key ID, absent when empty
	AttrCreatedMs = "cm"  // N: push config: CreatedMs, Unix ms
	AttrDelivered = "dv"  // N: push config: DeliveredVersion
	AttrFailures  = "fl"  // N: push config: Failures
	AttrLastError = "le"  // S: push config: LastError, absent when empty
	AttrPushPK    = "pp"  // S: [PushPartition] while the push config is not done (push index partition)
	AttrPushDue   = "pd"  // N: push config: NextAttemptMs, Unix ms (push index sort key)
	AttrCount     = "n"   // N: push counter: how many push configs the run has
)

// KeyPrefixes are the beginnings of every partition key this package
// writes: runs with their events and push configurations, idempotency
// records (UTF-8 and hex forms), control items (the agent registry, the
// lease watermarks, concurrency queues and counts, agents' spend) and the
// [ReplayCache]'s message IDs. A policy's dynamodb:LeadingKeys condition names
// them; terraform's is checked against this list.
var KeyPrefixes = []string{"RUN#", "IDEM#", "IDEMX#", "CTL#", replayPK}

// Index names.
const (
	// IndexList orders the runs of one agent newest first: (lp, ck), keys
	// only, in [IndexShards] partitions per agent.
	IndexList = "list"
	// IndexContext orders the runs of one context newest first: (cx, ck), keys only.
	IndexContext = "context"
	// IndexState orders the runs in one [RareState] newest first: (sp, ck),
	// keys only, in [IndexShards] partitions per state. A run leaves it
	// when it leaves the state (a resumed interrupt).
	IndexState = "state"
	// IndexLease holds every run's lease key: (ls, lk), keys only, in
	// [IndexShards] partitions. The reconciler reads it from a watermark
	// up (see [ControlPlane.Expired]): entries of runs that ended stay
	// behind, read once more and passed, instead of costing a write each.
	IndexLease = "lease"
	// IndexPush is the sparse index of push configurations not done:
	// (pp, pd), keys only. A configuration leaves it when Done is set.
	IndexPush = "push"
	// IndexEnded holds the terminal runs by update time: (ep, ek), keys
	// only, in [IndexShards] partitions; [ControlPlane.Ended] reads it
	// oldest first. A run enters it with the write that ends it (an index
	// write of about 1 unit) and leaves it when deleted. Runs that ended
	// on a table made before it are not in it until [Reindex] adds them.
	IndexEnded = "ended"
)

// IndexShards is how many partitions the list, state and lease indexes
// spread each of their keys over (write sharding: a run's shard is a hash
// of its ID). One index partition takes about 1,000 writes a second, so
// one agent can reserve about 4,000 runs a second; a list reads one
// partition per shard (and agent) and merges them.
const IndexShards = 4

// Partitions of tables made before the indexes were sharded: every run
// was in list partition "R" and live runs in lease partition "L". They are
// still read (lists post-filter them) until `sortie dynamo reindex` moves
// their runs to the sharded partitions.
const (
	legacyListPartition  = "R"
	legacyLeasePartition = "L"
)

// ListPartition returns the list index partition of the runs of agent in
// shard (0..[IndexShards]-1): "A#" + agent + "#" + shard.
func ListPartition(agent string, shard int) string { return fmt.Sprintf("A#%s#%d", agent, shard) }

// LeasePartition returns the lease index partition of shard: "L#" + shard.
func LeasePartition(shard int) string { return fmt.Sprintf("L#%d", shard) }

// StatePartition returns the state index partition of state in shard:
// "S#" + state + "#" + shard.
func StatePartition(state sortie.State, shard int) string {
	return fmt.Sprintf("S#%s#%d", state, shard)
}

// RareState reports whether runs in state s are in [IndexState]: every
// state but the common ones (submitted and working, which the lease index
// lists, and completed, which most runs end in and the list index lists).
func RareState(s sortie.State) bool {
	switch s {
	case sortie.StateFailed, sortie.StateCancelled, sortie.StateRejected, sortie.StateInputRequired, sortie.StateAuthRequired:
		return true
	}
	return false
}

// EndedPartition returns the ended index partition of shard: "E#" + shard.
func EndedPartition(shard int) string { return fmt.Sprintf("E#%d", shard) }

// PushPartition is the value of [AttrPushPK] on push configs in the push index.
const PushPartition = "P"

// ItemLimitBytes is DynamoDB's item size limit (400 KB). A write whose item
// would exceed it is refused with a [*sortie.ValidationError]; nothing is
// truncated or offloaded.
const ItemLimitBytes = 400 << 10

// TableDefinition returns the CreateTable input of a table named table,
// exactly as this package expects it: on-demand billing, key (pk, sk), the
// keys-only global secondary indexes [IndexList], [IndexContext],
// [IndexState], [IndexLease], [IndexPush] and [IndexEnded], and a stream of keys
// ([Watch] reads it to wake followers). TTL on [AttrTTL] is enabled
// separately (see [CreateTable]).
func TableDefinition(table string) *dynamodb.CreateTableInput {
	s := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	n := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeN}
	}
	key := func(hash, rng string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange},
		}
	}
	gsi := func(name, hash, rng string) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{IndexName: aws.String(name), KeySchema: key(hash, rng),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}
	}
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			s(AttrPK), s(AttrSK), s(AttrListPK), s(AttrCreated), s(AttrContext), s(AttrStatePK),
			s(AttrLeasePK), n(AttrLease), s(AttrPushPK), n(AttrPushDue), s(AttrEndedPK), n(AttrEnded),
		},
		KeySchema: key(AttrPK, AttrSK),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			gsi(IndexList, AttrListPK, AttrCreated),
			gsi(IndexContext, AttrContext, AttrCreated),
			gsi(IndexState, AttrStatePK, AttrCreated),
			gsi(IndexLease, AttrLeasePK, AttrLease),
			gsi(IndexPush, AttrPushPK, AttrPushDue),
			gsi(IndexEnded, AttrEndedPK, AttrEnded),
		},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly},
	}
}

// TableAPI is the part of the DynamoDB client [CreateTable] uses.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// CreateTable creates the table [TableDefinition] describes, waits until it
// is active and enables TTL on [AttrTTL], so expired idempotency records
// are deleted in time (reads treat them as absent from their expiry on). A
// table that already exists is an error wrapping the SDK's
// *types.ResourceInUseException.
func CreateTable(ctx context.Context, db TableAPI, table string) error {
	if _, err := db.CreateTable(ctx, TableDefinition(table)); err != nil {
		return fmt.Errorf("dynamo: create table %s: %w", table, err)
	}
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 5*time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 5*time.Minute); err != nil {
		return fmt.Errorf("dynamo: wait for table %s: %w", table, err)
	}
	_, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(AttrTTL), Enabled: aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("dynamo: enable TTL on %s.%s: %w", table, AttrTTL, err)
	}
	return nil
}

// IsTableExists reports whether err says the table already exists.
func IsTableExists(err error) bool {
	var inUse *types.ResourceInUseException
	return errors.As(err, &inUse)
}
