package host

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/sortie-run/sortie/controlplane/dynamo/dynamostream"
)

// Follow polls: how often followed runs are read when nothing wakes them.
const (
	// defaultFollowPoll is the poll of followers on SQLite, whose writers
	// in other processes wake nobody here.
	defaultFollowPoll = 200 * time.Millisecond
	// streamFollowPoll is the poll of followers on DynamoDB with the
	// table's stream, which wakes them: a safety net only.
	streamFollowPoll = 5 * time.Second
)

// streamWatcher returns the watcher of the DynamoDB table's stream that
// wakes this host's followers of runs any process changes, or nil when
// the table has no stream (then followers poll every 200 ms; logged).
func (h *Host) streamWatcher(ctx context.Context) (*dynamostream.Watcher, error) {
	ddb := dynamodb.NewFromConfig(h.aws.AWS(), func(o *dynamodb.Options) { o.BaseEndpoint = optional(h.cfg.AWS.DynamoEndpoint) })
	arn, err := dynamostream.StreamARN(ctx, ddb, h.cfg.AWS.Table)
	if err != nil {
		h.log.Warn("followers of runs other processes change poll every 200 ms", "error", err)
		return nil, nil
	}
	streams := dynamodbstreams.NewFromConfig(h.aws.AWS(), func(o *dynamodbstreams.Options) { o.BaseEndpoint = optional(h.cfg.AWS.DynamoEndpoint) })
	return dynamostream.New(streams, arn, h.aws.ControlPlane, &dynamostream.Options{Logger: h.log})
}

// optional is nil for "", else a pointer to s.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
