package lambda_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/sortie-run/sortie"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/internal/lambdarig"
)

// The binary in trigger mode routes a real EventBridge sample event to a
// run, launched on the worker function, where it completes; the same event
// delivered again starts no second run. An SNS message carrying two S3
// records starts one run per record, with the keys decoded, and once only.
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
		fnlambda.EnvLambdaEndpoint+"="+serialEndpoint(t, worker.Endpoint)))
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

	fanout, err := os.ReadFile(filepath.Join(root, "examples", "triggers", "events", "sns-s3-fanout.json"))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		invokeRaw(t, trigger, fanout)
	}
	page, err = cp.List(context.Background(), sortie.ListQuery{})
	if err != nil || len(page.Runs) != 3 {
		t.Fatalf("runs after an SNS message of two S3 records, twice = %d (%v), want 3", len(page.Runs), err)
	}
	for _, r := range page.Runs[:2] {
		run := waitRun(t, cp, r.ID, "completed", settled)
		if !strings.Contains(string(run.Result), "reports/Q1 2026 (final).csv") && !strings.Contains(string(run.Result), "reports/café 100% + tax.csv") {
			t.Errorf("fan-out run result %s, want a decoded key", run.Result)
		}
	}
}

// serialEndpoint forwards requests to the emulator at endpoint one at a time: it
// crashes on concurrent invokes, which one event fanning out to two runs
// makes (real Lambda runs them side by side).
func serialEndpoint(t *testing.T, endpoint string) string {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
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
