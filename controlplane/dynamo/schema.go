package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of the single table. They are short because every byte
// of an item counts against its write units. Every timestamp attribute is
// an integer in Unix ms, except [AttrTTL] (Unix seconds, read only by
// DynamoDB's TTL, never compared by this package).
const (
	AttrPK      = "pk"  // S: partition key: RUN#<id> or IDEM#…
	AttrSK      = "sk"  // S: sort key: RUN, IDEM, EVT#<attempt:4>#<seq:10>, PUSH or PUSH#<config id>
	AttrBody    = "b"   // B: the compressed JSON record (run, usage, event ends) or event batch
	AttrVersion = "v"   // N: the run's Version
	AttrState   = "st"  // S: the run's State
	AttrAttempt = "at"  // N: the run's current attempt number
	AttrListPK  = "lp"  // S: [ListPartition] on every run (list index partition)
	AttrCreated = "ck"  // S: created_ms zero-padded to 15 digits, '#', run ID (list sort key)
	AttrContext = "cx"  // S: the run's context ID, absent when empty (context index partition)
	AttrLeasePK = "ls"  // S: [LeasePartition] while the run is in the lease index
	AttrLease   = "lk"  // N: lease index key, Unix ms, never later than the run's LeaseExpiresMs
	AttrRunID   = "rid" // S: idempotency record: the run it reserved
	AttrHash    = "h"   // B: idempotency record: the request hash
	AttrExpires = "exp" // N: idempotency record: expiry, Unix ms
	AttrTTL     = "ttl" // N: idempotency record: expiry rounded up to Unix seconds, for DynamoDB TTL

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

// Index names and the constant partitions of the list and lease indexes.
const (
	// IndexList orders every run newest first: (lp, ck), keys only.
	IndexList = "list"
	// IndexContext orders the runs of one context newest first: (cx, ck), keys only.
	IndexContext = "context"
	// IndexLease is the sparse index of runs the reconciler must look at:
	// (ls, lk), keys only. Terminal and interrupted runs leave it.
	IndexLease = "lease"
	// IndexPush is the sparse index of push configurations not done:
	// (pp, pd), keys only. A configuration leaves it when Done is set.
	IndexPush = "push"
	// ListPartition is the value of [AttrListPK] on every run.
	ListPartition = "R"
	// LeasePartition is the value of [AttrLeasePK] on runs in the lease index.
	LeasePartition = "L"
	// PushPartition is the value of [AttrPushPK] on push configs in the push index.
	PushPartition = "P"
)

// ItemLimitBytes is DynamoDB's item size limit (400 KB). A write whose item
// would exceed it is refused with a [*sortie.ValidationError]; nothing is
// truncated or offloaded.
const ItemLimitBytes = 400 << 10

// TableDefinition returns the CreateTable input of a table named table,
// exactly as this package expects it: on-demand billing, key (pk, sk) and
// the keys-only global secondary indexes [IndexList], [IndexContext],
// [IndexLease] and [IndexPush]. TTL on [AttrTTL] is enabled separately (see [CreateTable]).
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
			s(AttrPK), s(AttrSK), s(AttrListPK), s(AttrCreated), s(AttrContext), s(AttrLeasePK),
			n(AttrLease), s(AttrPushPK), n(AttrPushDue),
		},
		KeySchema: key(AttrPK, AttrSK),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			gsi(IndexList, AttrListPK, AttrCreated),
			gsi(IndexContext, AttrContext, AttrCreated),
			gsi(IndexLease, AttrLeasePK, AttrLease),
			gsi(IndexPush, AttrPushPK, AttrPushDue),
		},
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
