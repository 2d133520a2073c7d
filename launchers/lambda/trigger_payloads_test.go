package lambda_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/internal/lambdarig"
	"github.com/sortie-run/sortie/payload"
)

// payloadRules route EventBridge events of source test.payloads to a
// probe run whose 20 steps each return 51,000 bytes of detail.pad, so
// its result is about 1 MB (the steps' inline total, sortie.MaxStepsBytes,
// bounds it), and those of test.variables to a run whose output variable
// is detail.doc.
const payloadRules = `{"version": "sortie.triggers/v1", "rules": [
  {"name": "big-result", "match": {"kind": "eventbridge", "source": "test.payloads"}, "agent": "probe",
   "variables": {"events": 0, "steps": 20, "step_pad": "${detail.pad}", "step_pad_bytes": 51000}},
  {"name": "big-variables", "match": {"kind": "eventbridge", "source": "test.variables"}, "agent": "probe",
   "variables": {"events": 0, "output": "${detail.doc}"}}]}`

// eventBridge is an EventBridge event of source with detail.
func eventBridge(id, source string, detail map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"version": "0", "id": id, "detail-type": "Payload Test", "source": source,
		"account": "123456789012", "time": "2026-12-02T19:00:00Z", "region": "us-east-1", "resources": []string{}, "detail": detail})
	return b
}

// An event routed by the function in trigger mode, given the payload
// bucket (SORTIE_PAYLOAD_BUCKET), launches a worker whose 1 MB result,
// over the inline limit, goes by reference through the result URL the
// trigger signed (payload/s3presign) and sealed into the invocation; the
// host reads it back exactly. No object or function log holds the canary
// or a URL signature. An event whose variables are over the inline limit
// is rejected at submit, naming the limit: the trigger has no store to
// write them to; no run starts.
func TestTriggerGrantsPayloadURLs(t *testing.T) {
	table, cp := newTable(t)
	worker := startRIE(t, 60, fnEnv(table))
	e, _, srv, _ := payloadHost(t, cp, &accepted{invs: make(chan *sortie.Invocation, 1)})
	rules := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(rules, []byte(payloadRules), 0o600); err != nil {
		t.Fatal(err)
	}
	trigger := startRIE(t, 60, fnEnv(table, fnlambda.EnvMode+"="+fnlambda.ModeTrigger, fnlambda.EnvTriggerRules+"="+rules,
		fnlambda.EnvWorkerFunction+"=function", fnlambda.EnvLambdaEndpoint+"="+serialEndpoint(t, worker.Endpoint),
		fnlambda.EnvPayloadBucket+"="+srv.SigningBlobURL()))

	const canary = "canary-trigger-5e93a1"
	rep := routed(t, trigger, eventBridge("ev-big-result", "test.payloads", map[string]any{"pad": canary}))
	if len(rep.Outcomes) != 1 || rep.Outcomes[0].Result != triggers.Started {
		t.Fatalf("trigger report = %+v, want one run started", rep)
	}
	id := rep.Outcomes[0].RunID
	done := waitRun(t, cp, id, "the triggered run to settle", settled)
	if done.State != sortie.StateCompleted || done.ResultRef == nil || len(done.Result) != 0 ||
		done.ResultRef.Key != payload.Key(id, sortie.ResultPayloadName(1)) {
		t.Fatalf("run = %s reason %q, result ref %+v (%d bytes inline); want completed with result-1 by reference", done.State, done.Reason, done.ResultRef, len(done.Result))
	}
	got, err := e.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%s) = %v", id, err)
	}
	want := struct {
		Events  int                `json:"events"`
		Attempt int                `json:"attempt"`
		Steps   []probe.StepResult `json:"steps"`
	}{Attempt: 1}
	pad := strings.Repeat(canary, 51000/len(canary)+1)[:51000]
	for i := 1; i <= 20; i++ {
		want.Steps = append(want.Steps, probe.StepResult{Step: i, Attempt: 1, Pad: pad})
	}
	back := want
	back.Steps, back.Attempt = nil, 0
	if err := json.Unmarshal(got.Result, &back); err != nil || !reflect.DeepEqual(back, want) || len(got.Result) < 1_000_000 {
		t.Fatalf("Get(%s).Result = %d bytes (%v), want the 20 padded steps of attempt 1 back exactly (over 1,000,000 bytes)", id, len(got.Result), err)
	}

	doc := strings.Repeat("v", sortie.MaxVariablesBytes)
	rep = routed(t, trigger, eventBridge("ev-big-variables", "test.variables", map[string]any{"doc": doc}))
	o := rep.Outcomes[0]
	if len(rep.Outcomes) != 1 || o.Result != triggers.Rejected || !strings.Contains(o.Reason, "invalid variables") ||
		!strings.Contains(o.Reason, "262144") || !strings.Contains(o.Reason, "no payload store") {
		t.Errorf("trigger report = %+v, want the run rejected naming variables, the 262144-byte limit and that there is no payload store", rep)
	}
	if page, err := cp.List(t.Context(), sortie.ListQuery{}); err != nil || len(page.Runs) != 1 {
		t.Errorf("runs = %d (%v), want 1: the rejected event started none", len(page.Runs), err)
	}

	objects := srv.Objects(t)
	if len(objects) != 1 {
		t.Errorf("the bucket holds %d objects, want 1: result-1", len(objects))
	}
	places := map[string][]byte{"trigger logs": []byte(trigger.Output()), "worker logs": []byte(worker.Output())}
	for k, v := range objects {
		places["object "+k] = v
	}
	for where, b := range places {
		if bytes.Contains(b, []byte(canary)) || bytes.Contains(b, []byte("X-Amz-Signature")) {
			t.Errorf("%s holds the canary or a URL signature", where)
		}
	}
}

// routed invokes the trigger function with event and decodes its report.
func routed(t *testing.T, trigger *lambdarig.RIE, event []byte) *triggers.Report {
	t.Helper()
	var rep triggers.Report
	if out := invokeRaw(t, trigger, event); json.Unmarshal(out, &rep) != nil || len(rep.Outcomes) == 0 {
		t.Fatalf("trigger answered %.300s, want a report of outcomes", out)
	}
	return &rep
}
