package triggers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie/functions/triggers"
)

// Each AWS kind, delivered as Lambda delivers it, starts the run its rule
// names with variables templated from the event.
func TestHandleLambdaStartsTheRightRuns(t *testing.T) {
	type want struct{ rule, key, result string }
	for _, tc := range []struct {
		sample string
		want   []want
	}{
		{"aws/ecr-image-push-event.json", []want{{"ecr-push", "trigger/ecr-push/eventbridge:13cde686-328b-6117-af20-0e5566167482",
			`{"repository":"my-repository-name","tag":"latest","event":"13cde686-328b-6117-af20-0e5566167482"}`}}},
		{"aws/s3-event.json", []want{
			{"s3-uploads", "trigger/s3-uploads/s3:sourcebucket/Happy Sequencer/Happy%20Face.jpg", `{"bucket":"sourcebucket","key":"Happy%20Face.jpg","size":1024}`},
			{"s3-audit", "trigger/s3-audit/s3:sourcebucket/Happy Sequencer/Happy%20Face.jpg", `{"audit":"s3 sourcebucket/Happy%20Face.jpg ObjectCreated:Put"}`}}},
		{"aws/sns-event.json", []want{{"sns-invoke", "trigger/sns-invoke/sns:95df01b4-ee98-5cb9-9903-4c221d41eb5e",
			`{"message":"Hello from SNS!","topic":"arn:aws:sns:EXAMPLE"}`}}},
	} {
		t.Run(tc.sample, func(t *testing.T) {
			router, r := newRouter(t)
			out, err := router.HandleLambda(context.Background(), readSample(t, tc.sample))
			if err != nil {
				t.Fatalf("HandleLambda(%s) = %v", tc.sample, err)
			}
			rep := out.(*triggers.Report)
			if len(rep.Outcomes) != len(tc.want) {
				t.Fatalf("HandleLambda(%s) = %+v, want %d runs", tc.sample, rep.Outcomes, len(tc.want))
			}
			for i, w := range tc.want {
				o := rep.Outcomes[i]
				if o.Rule != w.rule || o.IdempotencyKey != w.key || o.RunID == "" {
					t.Errorf("outcome %d = %+v, want rule %s, key %q and a run", i, o, w.rule, w.key)
					continue
				}
				run := checkResult(t, r, o.RunID, w.result)
				if run.IdempotencyKey != w.key || run.Labels["trigger.rule"] != w.rule {
					t.Errorf("run %s key %q labels %v, want key %q, rule label %s", run.ID, run.IdempotencyKey, run.Labels, w.key, w.rule)
				}
			}
		})
	}
}

func TestEventBridgeContextIDIsTemplated(t *testing.T) {
	router, r := newRouter(t)
	out, err := router.HandleLambda(context.Background(), readSample(t, "aws/ecr-image-push-event.json"))
	if err != nil {
		t.Fatalf("HandleLambda = %v", err)
	}
	run := r.Wait(t, out.(*triggers.Report).Outcomes[0].RunID)
	if run.ContextID != "ecr/my-repository-name" {
		t.Errorf("run context ID = %q, want ecr/my-repository-name", run.ContextID)
	}
}

// The same event delivered twice (SQS: with a new receipt handle and
// receive count, as a redelivery has) starts one run per rule.
func TestRedeliveryStartsNoSecondRun(t *testing.T) {
	first := sqsBatch(t, []string{"m-1"}, []any{`{"order":"A-1"}`})
	again := strings.Replace(strings.Replace(string(first), `"MessageReceiptHandle"`, `"OtherHandle"`, 1),
		`"ApproximateReceiveCount":"2"`, `"ApproximateReceiveCount":"3"`, 1)
	if again == string(first) {
		t.Fatal("the redelivered batch equals the first; the test would prove nothing")
	}
	for name, deliveries := range map[string][]json.RawMessage{
		"eventbridge": {readSample(t, "aws/ecr-image-push-event.json"), readSample(t, "aws/ecr-image-push-event.json")},
		"s3":          {readSample(t, "aws/s3-event.json"), readSample(t, "aws/s3-event.json")},
		"sns":         {readSample(t, "aws/sns-event.json"), readSample(t, "aws/sns-event.json")},
		"sqs":         {first, json.RawMessage(again)},
	} {
		t.Run(name, func(t *testing.T) {
			router, r := newRouter(t)
			for i, d := range deliveries {
				if _, err := router.HandleLambda(context.Background(), d); err != nil {
					t.Fatalf("HandleLambda(delivery %d) = %v", i+1, err)
				}
			}
			runs := r.Runs(t)
			rules := map[string]int{}
			for _, run := range runs {
				rules[run.Labels["trigger.rule"]]++
			}
			for rule, n := range rules {
				if n != 1 {
					t.Errorf("two deliveries started %d runs of rule %s, want 1 (runs %v)", n, rule, rules)
				}
			}
			if len(runs) == 0 {
				t.Errorf("two deliveries started no run, want one per rule")
			}
		})
	}
}

// An event no rule matches starts nothing, succeeds (no retry) and says
// in the log which rules were tried and why each did not match.
func TestUnmatchedEventStartsNothingAndSaysWhy(t *testing.T) {
	router, r := newRouter(t)
	out, err := router.HandleLambda(context.Background(), readSample(t, "aws/autoscaling-event-launch-successful.json"))
	if err != nil {
		t.Fatalf("HandleLambda(autoscaling event) = %v, want success: nothing to retry", err)
	}
	rep := out.(*triggers.Report)
	if len(rep.Outcomes) != 1 || rep.Outcomes[0].RunID != "" || rep.Outcomes[0].Unmatched == "" {
		t.Fatalf("HandleLambda(autoscaling event) = %+v, want one unmatched outcome", rep.Outcomes)
	}
	if runs := r.Runs(t); len(runs) != 0 {
		t.Errorf("an unmatched event started %d runs, want none", len(runs))
	}
	log := r.Log.String()
	for _, want := range []string{"no rule matched", `rules[0] ecr-push: source \"aws.autoscaling\" does not match \"aws.ecr\"`,
		"rules[1] s3-uploads: kind eventbridge is not s3", "rules[6] gcs-uploads: kind eventbridge is not cloudevents"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// A malformed record of an SQS batch is reported as that item's failure;
// the other records start their runs.
func TestSQSMalformedRecordIsOnlyThatItemsFailure(t *testing.T) {
	router, r := newRouter(t)
	batch := sqsBatch(t, []string{"MessageID_1", "m-2", "m-3", "m-4"},
		[]any{"Message Body", `{"order":"A-2"}`, 5, `{"order":"A-4"}`})
	out, err := router.HandleLambda(context.Background(), batch)
	if err != nil {
		t.Fatalf("HandleLambda(batch) = %v, want a partial batch response", err)
	}
	want := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "MessageID_1"}, {ItemIdentifier: "m-3"}}}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("HandleLambda(batch) (-want +got):\n%s", d)
	}
	runs := r.Runs(t)
	if len(runs) != 2 {
		t.Fatalf("batch started %d runs, want 2 (m-2, m-4)", len(runs))
	}
	got := map[string]bool{}
	for _, run := range runs {
		got[strings.TrimPrefix(run.IdempotencyKey, "trigger/sqs-orders/sqs:")] = true
		checkResult(t, r, run.ID, `{"order":"A-`+run.IdempotencyKey[len(run.IdempotencyKey)-1:]+`","message":"`+strings.TrimPrefix(run.IdempotencyKey, "trigger/sqs-orders/sqs:")+`"}`)
	}
	if !got["m-2"] || !got["m-4"] {
		t.Errorf("runs started for %v, want m-2 and m-4", got)
	}
	if log := r.Log.String(); !strings.Contains(log, "body.order: body is a string, not an object") {
		t.Errorf("log does not say why MessageID_1 failed:\n%s", log)
	}
}

// A failed record without a messageId cannot be reported alone: the
// whole batch fails, so Lambda retries it.
func TestSQSRecordWithoutMessageIDFailsTheBatch(t *testing.T) {
	router, r := newRouter(t)
	batch := sqsBatch(t, []string{"m-1", ""}, []any{`{"order":"A-1"}`, `{"order":"A-2"}`})
	if _, err := router.HandleLambda(context.Background(), batch); err == nil || !strings.Contains(err.Error(), "no messageId") {
		t.Errorf("HandleLambda(record without messageId) = %v, want an error saying so", err)
	}
	if runs := r.Runs(t); len(runs) != 1 {
		t.Errorf("batch started %d runs, want 1 (m-1, before the bad record)", len(runs))
	}
}

func TestHandleLambdaRefusesUnknownShapes(t *testing.T) {
	router, r := newRouter(t)
	for _, raw := range []string{`[]`, `{}`, `{"Records":[{"eventSource":"aws:kinesis"}]}`, `{"specversion":"1.0"}`, `nope`} {
		if _, err := router.HandleLambda(context.Background(), json.RawMessage(raw)); err == nil {
			t.Errorf("HandleLambda(%s) = nil error, want a refusal", raw)
		}
	}
	if runs := r.Runs(t); len(runs) != 0 {
		t.Errorf("refused events started %d runs, want none", len(runs))
	}
}
