package dynamo

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sortie-run/sortie"
)

// byPriority sends the calls of contexts marked by
// sortie.LivenessContext (a worker's claims, heartbeats, events and
// finishes) through liveness, every other call through normal: two
// clients, so two retry budgets (token buckets), and a burst of
// submissions throttled by DynamoDB never spends the retries that keep
// running attempts' leases.
type byPriority struct {
	normal, liveness API
}

func (p byPriority) pick(ctx context.Context) API {
	if sortie.IsLiveness(ctx) {
		return p.liveness
	}
	return p.normal
}

func (p byPriority) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return p.pick(ctx).GetItem(ctx, in, opts...)
}

func (p byPriority) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return p.pick(ctx).PutItem(ctx, in, opts...)
}

func (p byPriority) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return p.pick(ctx).UpdateItem(ctx, in, opts...)
}

func (p byPriority) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return p.pick(ctx).DeleteItem(ctx, in, opts...)
}

func (p byPriority) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return p.pick(ctx).Query(ctx, in, opts...)
}

func (p byPriority) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return p.pick(ctx).BatchGetItem(ctx, in, opts...)
}

func (p byPriority) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return p.pick(ctx).TransactWriteItems(ctx, in, opts...)
}
