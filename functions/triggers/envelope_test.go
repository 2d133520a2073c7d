package triggers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie/functions/triggers"
)

// byRule returns the started or existed outcomes of rule.
func byRule(outs []triggers.Outcome, rule string) []triggers.Outcome {
	var got []triggers.Outcome
	for _, o := range outs {
		if o.Rule == rule {
			got = append(got, o)
		}
	}
	return got
}

// An SNS message carrying an S3 notification with two records (S3 → SNS
// → Lambda) starts one run per record, matched by rules of kind s3, with
// the SNS MessageId in each identity; a rule naming kind sns still
// matches the envelope; a redelivery starts none.
func TestSNSCarryingS3RecordsStartsOneRunPerRecord(t *testing.T) {
	router, r := newRouter(t)
	const snsID = "5f1c0d2e-8a3b-5c4d-9e6f-0a1b2c3d4e5f"
	first, err := router.Replay(context.Background(), readSample(t, "envelopes/sns-s3.json"))
	if err != nil {
		t.Fatalf("Replay(sns-s3) = %v", err)
	}
	fanout := byRule(first.Outcomes, "s3-fanout")
	if len(fanout) != 2 {
		t.Fatalf("outcomes = %+v, want two runs of s3-fanout", first.Outcomes)
	}
	wants := []struct{ key, result string }{
		{"trigger/s3-fanout/s3:" + snsID + "/fanout-reports/0065F1A2B3C4D5E6F7/reports/Q1 2026 (final).csv",
			`{"key":"reports/Q1 2026 (final).csv","subject":"reports/Q1 2026 (final).csv","via":"sns","event":"` + snsID + `/fanout-reports/0065F1A2B3C4D5E6F7/reports/Q1 2026 (final).csv"}`},
		{"trigger/s3-fanout/s3:" + snsID + "/fanout-reports/0065F1A2B3C4D5E6F8/reports/café 100% + tax.csv",
			`{"key":"reports/café 100% + tax.csv","subject":"reports/café 100% + tax.csv","via":"sns","event":"` + snsID + `/fanout-reports/0065F1A2B3C4D5E6F8/reports/café 100% + tax.csv"}`},
	}
	for i, w := range wants {
		if o := fanout[i]; o.Result != triggers.Started || o.Kind != triggers.KindS3 || o.IdempotencyKey != w.key {
			t.Errorf("s3-fanout outcome %d = %+v, want started with key %q", i, o, w.key)
			continue
		}
		checkResult(t, r, fanout[i].RunID, w.result)
	}
	if env := byRule(first.Outcomes, "sns-uploads-audit"); len(env) != 1 || env[0].Kind != triggers.KindSNS || env[0].Result != triggers.Started {
		t.Errorf("envelope outcomes = %+v, want one run of the rule naming kind sns", env)
	}
	for _, o := range first.Outcomes {
		if o.Result == triggers.Unmatched {
			t.Errorf("outcome %+v: the envelope and its records all matched rules", o)
		}
	}
	again, err := router.HandleLambda(context.Background(), readSample(t, "envelopes/sns-s3.json"))
	if err != nil {
		t.Fatalf("HandleLambda(sns-s3 again) = %v", err)
	}
	for _, o := range again.(*triggers.Report).Outcomes {
		if o.Result != triggers.Existed || o.RunID == "" {
			t.Errorf("redelivery outcome %+v, want existed with its run", o)
		}
	}
	if n := len(r.Runs(t)); n != 3 {
		t.Errorf("two deliveries started %d runs, want 3 (two records, one envelope)", n)
	}
}

// An SQS batch (S3 → SNS → SQS, S3 → SQS, and s3:TestEvent both ways):
// S3 records start their runs; test notifications are acknowledged and
// start nothing; nothing is left to retry.
func TestSQSBodiesUnwrap(t *testing.T) {
	router, r := newRouter(t)
	out, err := router.HandleLambda(context.Background(), readSample(t, "envelopes/sqs-fanout.json"))
	if d := cmp.Diff(events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}, out); err != nil || d != "" {
		t.Fatalf("HandleLambda(sqs-fanout) = %v (-want +got):\n%s", err, d)
	}
	rep, err := router.Replay(context.Background(), readSample(t, "envelopes/sqs-fanout.json"))
	if err != nil {
		t.Fatal(err)
	}
	type short struct {
		Result triggers.Result
		Kind   triggers.Kind
		Rule   string
		Key    string
	}
	var got []short
	for _, o := range rep.Outcomes {
		got = append(got, short{o.Result, o.Kind, o.Rule, o.IdempotencyKey})
	}
	const snsID = "7a9b8c7d-0001-5e6f-8a9b-0c1d2e3f4a5b"
	want := []short{
		{triggers.Existed, triggers.KindSNS, "sns-uploads-audit", "trigger/sns-uploads-audit/sns:" + snsID},
		{triggers.Existed, triggers.KindS3, "s3-fanout", "trigger/s3-fanout/s3:" + snsID + "/fanout-reports/0065F1A2B3C4D5E700/inbox/order#1 €.json"},
		{triggers.Existed, triggers.KindS3, "s3-fanout", "trigger/s3-fanout/s3:2e1424d4-f796-459a-8184-9c92662be6db/fanout-reports/0065F1A2B3C4D5E701/direct/a b.txt"},
		{triggers.Ignored, triggers.KindSQS, "", ""},
		{triggers.Ignored, triggers.KindSQS, "", ""},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("replayed batch outcomes (-want +got):\n%s", d)
	}
	if n := len(r.Runs(t)); n != 3 {
		t.Errorf("batch started %d runs, want 3", n)
	}
	checkResult(t, r, rep.Outcomes[1].RunID, `{"key":"inbox/order#1 €.json","subject":"inbox/order#1 €.json","via":"sns",`+
		`"event":"`+snsID+`/fanout-reports/0065F1A2B3C4D5E700/inbox/order#1 €.json"}`)
}

// An EventBridge event from S3 routes its object to rules of kind s3 with
// the same paths as a notification record, the key decoded once.
func TestEventBridgeS3EventRoutesAsS3(t *testing.T) {
	router, r := newRouter(t)
	rep, err := router.Replay(context.Background(), readSample(t, "envelopes/eventbridge-s3.json"))
	if err != nil || len(rep.Outcomes) != 1 {
		t.Fatalf("Replay(eventbridge-s3) = %+v, %v; want one outcome", rep, err)
	}
	o := rep.Outcomes[0]
	id := "17793124-05d4-b198-2fde-7ededc63b103/fanout-reports/0065F1A2B3C4D5E702/exports/week 9 (draft).csv"
	if o.Rule != "s3-fanout" || o.Kind != triggers.KindS3 || o.EventID != id {
		t.Fatalf("outcome = %+v, want s3-fanout on s3 event %s", o, id)
	}
	checkResult(t, r, o.RunID, `{"key":"exports/week 9 (draft).csv","subject":"exports/week 9 (draft).csv","via":"eventbridge","event":"`+id+`"}`)
}

// An s3:TestEvent delivered as it is starts nothing and is no error.
func TestS3TestEventIsIgnored(t *testing.T) {
	router, r := newRouter(t)
	out, err := router.HandleLambda(context.Background(), readSample(t, "envelopes/s3-test-event.json"))
	if err != nil {
		t.Fatalf("HandleLambda(s3:TestEvent) = %v, want success", err)
	}
	rep := out.(*triggers.Report)
	if len(rep.Outcomes) != 1 || rep.Outcomes[0].Result != triggers.Ignored || !strings.Contains(rep.Outcomes[0].Reason, "s3:TestEvent") {
		t.Errorf("HandleLambda(s3:TestEvent) = %+v, want one ignored outcome", rep.Outcomes)
	}
	if n := len(r.Runs(t)); n != 0 {
		t.Errorf("s3:TestEvent started %d runs, want none", n)
	}
}
