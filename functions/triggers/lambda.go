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
// each event, with the reasons malformed records were refused.
type Report struct {
	Kind     Kind      `json:"kind"`
	Outcomes []Outcome `json:"outcomes"`
	// Malformed lists the records that could not be read, with why.
	Malformed []string `json:"malformed,omitempty"`
}

// HandleLambda routes one raw Lambda event (see [DetectKind]). For an SQS
// batch it returns events.SQSEventResponse listing, in
// batchItemFailures, the messageId of every record that was malformed or
// whose run could not be started, so only those are retried (the
// function's event source mapping must enable ReportBatchItemFailures);
// the error is non-nil only when the batch itself cannot be read or a
// failed record has no messageId. For the other kinds it returns a
// *[Report] and an error when any record failed, so Lambda retries the
// delivery; runs already started are not started again (idempotency
// keys). An event no rule matches is a success.
func (r *Router) HandleLambda(ctx context.Context, raw json.RawMessage) (any, error) {
	kind, recs, err := ParseAWS(raw)
	if err != nil {
		r.log.Error("trigger: event refused", "err", err)
		return nil, err
	}
	if kind == KindSQS {
		return r.handleSQS(ctx, recs)
	}
	rep, err := r.routeAll(ctx, kind, recs)
	return rep, err
}

func (r *Router) handleSQS(ctx context.Context, recs []Record) (events.SQSEventResponse, error) {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, rec := range recs {
		err := rec.Err
		if err == nil {
			_, err = r.Route(ctx, rec.Event)
		} else {
			r.log.Error("trigger: malformed record", "kind", KindSQS, "item", rec.ItemID, "err", err)
		}
		if err == nil {
			continue
		}
		if rec.ItemID == "" {
			return resp, fmt.Errorf("trigger: SQS record %d failed and has no messageId to report, so the whole batch is retried: %w", i, err)
		}
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.ItemID})
	}
	return resp, nil
}

// routeAll routes every readable record; the error joins the failures.
func (r *Router) routeAll(ctx context.Context, kind Kind, recs []Record) (*Report, error) {
	rep := &Report{Kind: kind, Outcomes: []Outcome{}}
	var errs []error
	for _, rec := range recs {
		if rec.Err != nil {
			r.log.Error("trigger: malformed record", "kind", kind, "err", rec.Err)
			rep.Malformed = append(rep.Malformed, rec.Err.Error())
			errs = append(errs, rec.Err)
			continue
		}
		out, err := r.Route(ctx, rec.Event)
		rep.Outcomes = append(rep.Outcomes, out...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

// Replay routes a raw event of an AWS kind like [Router.HandleLambda] but
// always returns a *[Report], for SQS batches too (a malformed record is
// listed in Malformed and in the error). CloudEvents go through
// [Router.RouteCloudEvent].
func (r *Router) Replay(ctx context.Context, raw json.RawMessage) (*Report, error) {
	kind, recs, err := ParseAWS(raw)
	if err != nil {
		return nil, err
	}
	return r.routeAll(ctx, kind, recs)
}
