package dynamo

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
)

// transientTries bounds the tries of one DynamoDB call that keeps failing
// transiently (throttling, a transaction conflict, a 5xx answer, a network
// failure), on top of the SDK's own retries.
const transientTries = 8

// retryAPI is the client with transient failures tried again: every
// conditional write of this package recognises its own write when a try
// was applied but its answer lost (the condition then fails with this
// write's item), so every call may be sent again as it is.
type retryAPI struct {
	API
	units *ledger
}

// retried calls fn until it succeeds, fails with anything but a transient
// error, ctx ends or transientTries, waiting a jittered, growing pause
// between tries and counting each retry and its cause.
func retried[T any](ctx context.Context, l *ledger, fn func() (T, error)) (T, error) {
	for try := 1; ; try++ {
		out, err := fn()
		if err == nil || !errors.Is(sentinel(err), sortie.ErrUnavailable) || try == transientTries || ctx.Err() != nil {
			return out, err
		}
		l.retry(err)
		if !pause(ctx, try) {
			return out, err
		}
	}
}

func (r retryAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return retried(ctx, r.units, func() (*dynamodb.GetItemOutput, error) { return r.API.GetItem(ctx, in, opts...) })
}

func (r retryAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return retried(ctx, r.units, func() (*dynamodb.PutItemOutput, error) { return r.API.PutItem(ctx, in, opts...) })
}

func (r retryAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return retried(ctx, r.units, func() (*dynamodb.UpdateItemOutput, error) { return r.API.UpdateItem(ctx, in, opts...) })
}

func (r retryAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return retried(ctx, r.units, func() (*dynamodb.DeleteItemOutput, error) { return r.API.DeleteItem(ctx, in, opts...) })
}

func (r retryAPI) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return retried(ctx, r.units, func() (*dynamodb.QueryOutput, error) { return r.API.Query(ctx, in, opts...) })
}

func (r retryAPI) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return retried(ctx, r.units, func() (*dynamodb.BatchGetItemOutput, error) { return r.API.BatchGetItem(ctx, in, opts...) })
}

func (r retryAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return retried(ctx, r.units, func() (*dynamodb.TransactWriteItemsOutput, error) {
		return r.API.TransactWriteItems(ctx, in, opts...)
	})
}

// throttled reports DynamoDB's throttling exceptions.
func throttled(err error) bool {
	var (
		pte *types.ProvisionedThroughputExceededException
		rle *types.RequestLimitExceeded
		tte *types.ThrottlingException
	)
	return errors.As(err, &pte) || errors.As(err, &rle) || errors.As(err, &tte)
}
