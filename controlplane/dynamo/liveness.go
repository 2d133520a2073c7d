package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sortie-run/sortie"
)

// byPriority sends the calls of contexts marked by
// sortie.LivenessContext (a worker's claims, heartbeats, events and
// finishes) through liveness, every other call through normal: two
// clients, so two retry budgets (token buckets), and a burst of
// submissions throttled by DynamoDB never spends the retries that keep
// running attempts' leases.
//
// When slots is set, at most cap(slots) other calls are in flight at once
// (the others wait their turn here, or until their context ends), so
// DynamoDB's queue never holds more than that ahead of a heartbeat.
type byPriority struct {
	normal, liveness API
	slots            chan struct{}
}

// pick returns the client of ctx's call, and the function that ends it.
func (p byPriority) pick(ctx context.Context) (API, func(), error) {
	if sortie.IsLiveness(ctx) {
		return p.liveness, func() {}, nil
	}
	if p.slots == nil {
		return p.normal, func() {}, nil
	}
	select {
	case p.slots <- struct{}{}:
		return p.normal, func() { <-p.slots }, nil
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("wait for a DynamoDB call slot: %w", context.Cause(ctx))
	}
}

// call runs fn on the client of ctx's call.
func call[T any](ctx context.Context, p byPriority, fn func(API) (T, error)) (T, error) {
	api, done, err := p.pick(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	defer done()
	return fn(api)
}

func (p byPriority) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return call(ctx, p, func(a API) (*dynamodb.GetItemOutput, error) { return a.GetItem(ctx, in, opts...) })
}

func (p byPriority) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return call(ctx, p, func(a API) (*dynamodb.PutItemOutput, error) { return a.PutItem(ctx, in, opts...) })
}

func (p byPriority) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return call(ctx, p, func(a API) (*dynamodb.UpdateItemOutput, error) { return a.UpdateItem(ctx, in, opts...) })
}

func (p byPriority) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return call(ctx, p, func(a API) (*dynamodb.DeleteItemOutput, error) { return a.DeleteItem(ctx, in, opts...) })
}

func (p byPriority) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return call(ctx, p, func(a API) (*dynamodb.QueryOutput, error) { return a.Query(ctx, in, opts...) })
}

func (p byPriority) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return call(ctx, p, func(a API) (*dynamodb.BatchGetItemOutput, error) { return a.BatchGetItem(ctx, in, opts...) })
}

func (p byPriority) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return call(ctx, p, func(a API) (*dynamodb.TransactWriteItemsOutput, error) { return a.TransactWriteItems(ctx, in, opts...) })
}
