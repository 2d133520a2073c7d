package triggers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// Report is what [Router.HandleLambda] returns for EventBridge, S3 and
// SNS deliveries (and [Router.Replay] for every kind): the outcome of
// each event and rule, in delivery order.
type Report struct {
	Kind     Kind      `json:"kind"`
	Outcomes []Outcome `json:"outcomes"`
}

// Count returns how many outcomes have result res.
func (rep *Report) Count(res Result) int {
	n := 0
	for _, o := range rep.Outcomes {
		if o.Result == res {
			n++
		}
	}
	return n
}

// HandleLambda routes one raw Lambda event (see [DetectKind] and
// [ParseAWS]). For an SQS batch it returns events.SQSEventResponse
// listing, in batchItemFailures, the messageId of every record one of
// whose runs failed to start, so only those are delivered again (the
// event source mapping must enable ReportBatchItemFailures; Lambda
// Developer Guide, "Handling errors for an SQS event source": an empty
// list acknowledges the whole batch). In a batch of a FIFO queue (see
// [Record.FIFO]) the first failure in a message group also fails every
// later record of that group in the batch, none of which is routed, so
// the group's runs start in the order its messages were sent; other
// groups go on. A rejected record is not listed: a redelivery cannot
// help, so it is acknowledged, with the rejection in the log. For the
// other kinds it returns a *[Report] and, when a run failed to start, an
// error, so Lambda retries the asynchronous invocation; runs already
// started are not started again (idempotency keys). Unmatched, rejected
// and ignored events are successes.
func (r *Router) HandleLambda(ctx context.Context, raw json.RawMessage) (any, error) {
	kind, recs, err := ParseAWS(raw)
	if err != nil {
		r.log.Warn("trigger: event rejected; nothing started", "err", err)
		return nil, err
	}
	if kind == KindSQS {
		return r.handleSQS(ctx, recs)
	}
	return r.routeAll(ctx, kind, recs)
}

func (r *Router) handleSQS(ctx context.Context, recs []Record) (events.SQSEventResponse, error) {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	failedGroups := map[string]bool{} // FIFO message groups with a failed record in this batch
	for i, rec := range recs {
		if rec.FIFO && failedGroups[rec.Group] {
			r.log.Warn("trigger: FIFO record not routed: an earlier record of its message group failed in this batch, so it is retried after that one",
				"event", rec.ItemID, "group", rec.Group)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.ItemID})
			continue
		}
		if _, err := r.RouteRecord(ctx, rec); err == nil {
			continue
		} else if rec.ItemID == "" {
			// Unreachable: a record without a messageId is rejected, never
			// routed; kept so a future path cannot drop a failure silently.
			return resp, fmt.Errorf("trigger: SQS record %d failed and has no messageId to report, so the whole batch is retried: %w", i, err)
		}
		if rec.FIFO {
			failedGroups[rec.Group] = true
		}
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.ItemID})
	}
	return resp, nil
}

// routeAll routes every record; the error joins the failures.
func (r *Router) routeAll(ctx context.Context, kind Kind, recs []Record) (*Report, error) {
	rep := &Report{Kind: kind, Outcomes: []Outcome{}}
	var errs []error
	for _, rec := range recs {
		out, err := r.RouteRecord(ctx, rec)
		rep.Outcomes = append(rep.Outcomes, out...)
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

// Replay routes a raw event of an AWS kind like [Router.HandleLambda] but
// always returns a *[Report], for SQS batches too. CloudEvents go through
// [Router.RouteCloudEvent].
func (r *Router) Replay(ctx context.Context, raw json.RawMessage) (*Report, error) {
	kind, recs, err := ParseAWS(raw)
	if err != nil {
		return nil, err
	}
	return r.routeAll(ctx, kind, recs)
}
