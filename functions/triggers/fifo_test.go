package triggers_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/internal/rig"
)

// In a batch of a FIFO queue, the first failed record of a message group
// fails every later record of that group (none of them submitted), and
// other groups go on; a standard queue with the same batch retries only
// the failed record.
func TestSQSFIFOFailureHoldsBackItsGroup(t *testing.T) {
	ids := []string{"m-1", "m-2", "m-3", "m-4", "m-5", "m-6"}
	groups := []string{"g1", "g1", "g2", "g1", "g2", "g1"}
	for _, tc := range []struct {
		queue       string
		wantFailed  []string
		wantStarted []string
	}{
		{"arn:aws:sqs:us-west-2:123456789012:orders.fifo", []string{"m-2", "m-4", "m-6"}, []string{"m-1", "m-3", "m-5"}},
		{"arn:aws:sqs:us-west-2:123456789012:orders", []string{"m-2"}, []string{"m-1", "m-3", "m-4", "m-5", "m-6"}},
	} {
		t.Run(tc.queue[strings.LastIndexByte(tc.queue, ':')+1:], func(t *testing.T) {
			rules, err := triggers.ParseRules([]byte(`{"version":"sortie.triggers/v1","rules":[
			  {"name":"orders","match":{"kind":"sqs"},"agent":"probe","variables":{"events":0,"output":"${body.order}"}}]}`))
			if err != nil {
				t.Fatal(err)
			}
			r := rig.New(t)
			sub := &failOn{Submitter: r.Engine, variables: `{"events":0,"output":"A-2"}`}
			router := triggers.NewRouter(rules, sub, &triggers.Options{Logger: r.Logger()})
			var bodies []any
			for _, id := range ids {
				bodies = append(bodies, `{"order":"A-`+id[2:]+`"}`)
			}
			batch := sqsBatchWith(t, ids, bodies, func(i int, rec map[string]any) {
				rec["eventSourceARN"] = tc.queue
				rec["attributes"] = map[string]any{"MessageGroupId": groups[i], "SequenceNumber": "1000" + ids[i][2:]}
			})
			out, err := router.HandleLambda(context.Background(), batch)
			if err != nil {
				t.Fatalf("HandleLambda(batch, m-2 unavailable) = %v", err)
			}
			want := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
			for _, id := range tc.wantFailed {
				want.BatchItemFailures = append(want.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
			}
			if d := cmp.Diff(want, out); d != "" {
				t.Errorf("HandleLambda(batch, m-2 unavailable) (-want +got):\n%s", d)
			}
			started := map[string]bool{}
			for _, run := range r.Runs(t) {
				started[strings.TrimPrefix(run.IdempotencyKey, "trigger/orders/sqs:")] = true
			}
			if d := cmp.Diff(tc.wantStarted, slices.Sorted(maps.Keys(started))); d != "" {
				t.Errorf("runs started (-want +got):\n%s", d)
			}
		})
	}
}
