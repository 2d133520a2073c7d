package lambda_test

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/internal/lambdarig"
)

// The binary in trigger mode routes a real EventBridge sample event to a
// run, launched on the worker function, where it completes; the same event
// delivered again starts no second run.
func TestTriggerModeStartsRuns(t *testing.T) {
	table, cp := newTable(t)
	worker := startRIE(t, 60, fnEnv(table))
	root, err := lambdarig.Root()
	if err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(root, "examples", "triggers", "rules.json")
	trigger := startRIE(t, 60, fnEnv(table, fnlambda.EnvMode+"="+fnlambda.ModeTrigger,
		fnlambda.EnvTriggerRules+"="+rules, fnlambda.EnvWorkerFunction+"=function",
		fnlambda.EnvLambdaEndpoint+"="+worker.Endpoint))
	event, err := os.ReadFile(filepath.Join(root, "examples", "triggers", "events", "eventbridge-ecr-push.json"))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		invokeRaw(t, trigger, event)
	}
	page, err := cp.List(context.Background(), sortie.ListQuery{})
	if err != nil || len(page.Runs) != 1 {
		t.Fatalf("runs after the same event twice = %d (%v), want 1", len(page.Runs), err)
	}
	run := waitRun(t, cp, page.Runs[0].ID, "completed", settled)
	if run.State != sortie.StateCompleted || !strings.Contains(string(run.Result), `"repository"`) ||
		!strings.HasPrefix(run.IdempotencyKey, "trigger/ecr-push/") {
		t.Errorf("triggered run = %s, result %s, key %q; want completed with the templated output and a trigger key", run.State, run.Result, run.IdempotencyKey)
	}
}

// invokeRaw invokes a function synchronously with a raw event and fails on
// a function error.
func invokeRaw(t *testing.T, r *lambdarig.RIE, event []byte) []byte {
	t.Helper()
	out, err := lambdaClient(r).Invoke(context.Background(), &awslambda.InvokeInput{FunctionName: aws.String("function"), Payload: event})
	if err != nil {
		t.Fatalf("Invoke(trigger) = %v", err)
	}
	if strings.Contains(string(out.Payload), "errorType") {
		t.Fatalf("Invoke(trigger) answered a function error: %s", out.Payload)
	}
	return out.Payload
}
