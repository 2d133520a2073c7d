package lambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/sortie-run/sortie"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/internal/lambdarig"
)

// accepted is a launcher that does what Lambda's async Invoke does before
// the function runs: it accepts the invocation (202) and queues it; the
// test delivers it.
type accepted struct{ invs chan *sortie.Invocation }

func (a *accepted) Start(_ context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	a.invs <- inv
	return sortie.Ref{Provider: "lambda", Resource: "function", ID: "queued:" + inv.LaunchID, RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
}

// deliver posts inv to the worker's emulator as Lambda's async queue would,
// with request ID id, and returns the response's status and body.
func deliver(t *testing.T, r *lambdarig.RIE, id string, inv *sortie.Invocation) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(inv)
	req, _ := http.NewRequest(http.MethodPost, r.Endpoint+"/2015-03-31/functions/function/invocations", bytes.NewReader(b))
	req.Header.Set("X-Amzn-RequestId", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("deliver run %s attempt %d: %v", inv.RunID, inv.Attempt, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// invokeSync invokes the reconciler function with event and decodes its response.
func invokeSync(t *testing.T, r *lambdarig.RIE, event any) fnlambda.Response {
	t.Helper()
	b, _ := json.Marshal(event)
	out, err := lambdaClient(r).Invoke(context.Background(), &awslambda.InvokeInput{FunctionName: aws.String("function"), Payload: b})
	if err != nil {
		t.Fatalf("Invoke(reconciler, %.200s) = %v, want nil", b, err)
	}
	var resp fnlambda.Response
	if err := json.Unmarshal(out.Payload, &resp); err != nil || resp.Status == "" {
		t.Fatalf("Invoke(reconciler, %.200s) answered %s, want a Response", b, out.Payload)
	}
	return resp
}

// failureRecord is the on-failure destination record Lambda sends for
// the failed invocation of inv with request ID requestID, answered body.
func failureRecord(requestID string, inv *sortie.Invocation, body []byte) map[string]any {
	return map[string]any{
		"version": "1.0", "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"requestContext": map[string]any{"requestId": requestID, "functionArn": "arn:aws:lambda:us-east-1:012345678912:function:function:$LATEST",
			"condition": "RetriesExhausted", "approximateInvokeCount": 1},
		"requestPayload":  inv,
		"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
		"responsePayload": json.RawMessage(body),
	}
}

// scheduledEvent is the EventBridge event of the reconciler's schedule.
var scheduledEvent = map[string]any{"version": "0", "id": "ev-1", "detail-type": "Scheduled Event", "source": "aws.events", "detail": map[string]any{}}

// A worker that crashes leaves its attempt live; Lambda's on-failure
// record, built here from the real failed invocation under the emulator,
// makes the reconciler end it with a retryable error (once); a scheduled
// event then relaunches the run on the worker function, where attempt 2
// completes.
func TestCrashRecordedByReconciler(t *testing.T) {
	table, cp := newTable(t)
	worker := startRIE(t, 60, fnEnv(table))
	reconciler := startRIE(t, 60, fnEnv(table, fnlambda.EnvMode+"="+fnlambda.ModeReconciler,
		fnlambda.EnvWorkerFunction+"=function", fnlambda.EnvLambdaEndpoint+"="+worker.Endpoint))
	queue := &accepted{invs: make(chan *sortie.Invocation, 1)}
	e := newEngine(t, cp, queue)
	run := submit(t, e, map[string]any{"events": 2, "crash_attempts": 1, "output": "second time"}, sortie.Policy{MaxAttempts: 3}, nil)
	inv := <-queue.invs

	const requestID = "6b1f2c7e-0000-4000-8000-000000000001"
	status, body := deliver(t, worker, requestID, inv)
	if status < 300 || !strings.Contains(string(body), "Runtime.ExitError") {
		t.Fatalf("deliver(crashing attempt) = %d %s, want a Runtime.ExitError failure", status, body)
	}
	record := failureRecord(requestID, inv, body)
	if resp := invokeSync(t, reconciler, record); resp.Status != fnlambda.StatusRecorded || resp.RunID != run.ID {
		t.Fatalf("reconciler(on-failure record) = %+v, want status %q for run %s", resp, fnlambda.StatusRecorded, run.ID)
	}
	got, _ := cp.Get(context.Background(), run.ID)
	a := got.Attempts[0]
	if a.Error == nil || a.Error.Type != fnlambda.ErrorTypeLambda || !a.Error.Retryable || !strings.Contains(a.Error.Message, "Runtime.ExitError") {
		t.Fatalf("attempt 1 error = %+v, want a retryable %q error naming Runtime.ExitError", a.Error, fnlambda.ErrorTypeLambda)
	}
	if resp := invokeSync(t, reconciler, record); resp.Status != fnlambda.StatusIgnored {
		t.Errorf("reconciler(the same record again) = %+v, want status %q", resp, fnlambda.StatusIgnored)
	}
	got = waitRun(t, cp, run.ID, "the reconciler to relaunch and attempt 2 to complete", func(r *sortie.Run) bool {
		if !settled(r) {
			invokeSync(t, reconciler, scheduledEvent)
		}
		return settled(r)
	})
	if got.State != sortie.StateCompleted || got.Attempt != 2 || string(got.Result) != `"second time"` {
		t.Fatalf("run = %s on attempt %d result %s reason %q, want completed on attempt 2", got.State, got.Attempt, got.Result, got.Reason)
	}
}
