package triggers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/internal/rig"
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
			{"s3-uploads", "trigger/s3-uploads/s3:sourcebucket/Happy Sequencer/Happy Face.jpg",
				`{"bucket":"sourcebucket","key":"Happy Face.jpg","raw_key":"Happy%20Face.jpg","subject":"Happy Face.jpg","size":1024}`},
			{"s3-audit", "trigger/s3-audit/s3:sourcebucket/Happy Sequencer/Happy Face.jpg", `{"audit":"s3 sourcebucket/Happy Face.jpg ObjectCreated:Put"}`}}},
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
				if o.Result != triggers.Started || o.Rule != w.rule || o.IdempotencyKey != w.key || o.RunID == "" {
					t.Errorf("outcome %d = %+v, want a started run of rule %s with key %q", i, o, w.rule, w.key)
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
			var reps [2]*triggers.Report
			for i, d := range deliveries {
				if _, err := router.HandleLambda(context.Background(), d); err != nil {
					t.Fatalf("HandleLambda(delivery %d) = %v", i+1, err)
				}
				// Replay reports every kind, SQS too; it routes the same way.
				rep, err := router.Replay(context.Background(), d)
				if err != nil {
					t.Fatalf("Replay(delivery %d) = %v", i+1, err)
				}
				reps[i] = rep
			}
			for i, o := range reps[1].Outcomes {
				if o.Result != triggers.Existed || o.RunID == "" || o.RunID != reps[0].Outcomes[i].RunID {
					t.Errorf("redelivery outcome %d = %+v, want existed with run %s", i, o, reps[0].Outcomes[i].RunID)
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
	if len(rep.Outcomes) != 1 || rep.Outcomes[0].Result != triggers.Unmatched || rep.Outcomes[0].RunID != "" || rep.Outcomes[0].Reason == "" {
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

// In an SQS batch, records that cannot be read or templated are rejected
// and acknowledged (a redelivery cannot help); the others start their
// runs, and batchItemFailures is empty.
func TestSQSRejectedRecordsAreAcknowledged(t *testing.T) {
	router, r := newRouter(t)
	batch := sqsBatch(t, []string{"MessageID_1", "m-2", "m-3", "m-4", ""},
		[]any{"Message Body", `{"order":"A-2"}`, 5, `{"order":"A-4"}`, `{"order":"A-5"}`})
	out, err := router.HandleLambda(context.Background(), batch)
	if err != nil {
		t.Fatalf("HandleLambda(batch) = %v, want a batch response", err)
	}
	if d := cmp.Diff(events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}, out); d != "" {
		t.Errorf("HandleLambda(batch): only rejections, so no item to retry (-want +got):\n%s", d)
	}
	runs := r.Runs(t)
	got := map[string]bool{}
	for _, run := range runs {
		id := strings.TrimPrefix(run.IdempotencyKey, "trigger/sqs-orders/sqs:")
		got[id] = true
		checkResult(t, r, run.ID, `{"order":"A-`+id[len(id)-1:]+`","message":"`+id+`"}`)
	}
	if d := cmp.Diff(map[string]bool{"m-2": true, "m-4": true}, got); d != "" {
		t.Errorf("runs started (-want +got):\n%s", d)
	}
	log := r.Log.String()
	for _, want := range []string{"body.order: body is a string, not an object", "event.Records[2]", "event.Records[4].messageId"} {
		if !strings.Contains(log, "event rejected") || !strings.Contains(log, want) {
			t.Errorf("log does not record the rejection saying %q:\n%s", want, log)
		}
	}
}

// A record whose run cannot be started for a reason a redelivery may cure
// is the only item in batchItemFailures.
func TestSQSFailedRecordIsTheOnlyItemRetried(t *testing.T) {
	rules, err := triggers.ParseRules([]byte(`{"version":"sortie.triggers/v1","rules":[
	  {"name":"orders","match":{"kind":"sqs"},"agent":"probe","variables":{"events":0,"output":"${body.order}"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := rig.New(t)
	sub := &failOn{Submitter: r.Engine, variables: `{"events":0,"output":"A-2"}`}
	router := triggers.NewRouter(rules, sub, &triggers.Options{Logger: r.Logger()})
	out, err := router.HandleLambda(context.Background(), sqsBatch(t, []string{"m-1", "m-2", "m-3"},
		[]any{`{"order":"A-1"}`, `{"order":"A-2"}`, `{"order":"A-3"}`}))
	want := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "m-2"}}}
	if d := cmp.Diff(want, out); err != nil || d != "" {
		t.Errorf("HandleLambda(batch, m-2 unavailable) = %v (-want +got):\n%s", err, d)
	}
	if runs := r.Runs(t); len(runs) != 2 {
		t.Errorf("batch started %d runs, want 2 (m-1, m-3)", len(runs))
	}
}

// failOn is a Submitter that fails the submission with the given
// variables as a control plane outage would.
type failOn struct {
	triggers.Submitter
	variables string
}

func (f *failOn) SubmitCreated(ctx context.Context, req *sortie.SubmitRequest) (*sortie.Run, bool, error) {
	if string(req.Variables) == f.variables {
		return nil, false, fmt.Errorf("control plane: %w", sortie.ErrUnavailable)
	}
	return f.Submitter.SubmitCreated(ctx, req)
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

// An event whose own object holds a key twice ({"Records":[],
// "Records":[...]}, read as its last batch) is refused naming the key,
// from Lambda and from a replay ("sortie trigger --event"); nothing starts.
func TestEventWithKeyTwiceIsRefused(t *testing.T) {
	router, r := newRouter(t)
	var s3 struct{ Records json.RawMessage }
	if err := json.Unmarshal(readSample(t, "aws/s3-event.json"), &s3); err != nil || len(s3.Records) == 0 {
		t.Fatalf("s3 sample: %v", err)
	}
	twice := json.RawMessage(`{"Records":[],"Records":` + string(s3.Records) + `}`)
	if _, err := router.HandleLambda(context.Background(), twice); err == nil || !strings.Contains(err.Error(), `duplicate object key "Records"`) {
		t.Errorf("HandleLambda(Records twice) = %v, want a refusal naming Records", err)
	}
	if _, err := router.Replay(context.Background(), twice); err == nil || !strings.Contains(err.Error(), `duplicate object key "Records"`) {
		t.Errorf("Replay(Records twice) = %v, want a refusal naming Records", err)
	}
	if runs := r.Runs(t); len(runs) != 0 {
		t.Errorf("refused events started %d runs, want none", len(runs))
	}
}
