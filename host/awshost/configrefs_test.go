package awshost_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/testrig/secretstores"
)

const (
	stripeARN    = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:stripe-AbC"
	stripeCanary = "lambda-aws-canary-7e21"
)

// The worker function resolves an "aws_secret" reference with Secrets
// Manager (a JSON 1.1 server on loopback) when the attempt executes: the
// handler sees the value, the run in the table does not hold it.
func TestFunctionResolvesSecretsManagerReferences(t *testing.T) {
	endpoint, table := useDynamoDBLocal(t)
	store := secretstores.StartAWS(t, map[string]string{stripeARN: stripeCanary})
	vars := map[string]string{fnlambda.EnvTable: table, fnlambda.EnvDynamoEndpoint: endpoint,
		fnlambda.EnvSecretsManagerEndpoint: store.URL,
		fnlambda.EnvConfigRefs:             `{"version": "sortie.configrefs/v1", "refs": {"stripe": {"var": "STRIPE_KEY", "aws_secret": "` + stripeARN + `"}}}`}
	env, err := fnlambda.LoadEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("LoadEnv(%v) = %v", vars, err)
	}
	reg := functions.NewRegistry()
	reg.Register("refcheck", func(_ context.Context, c *functions.Call) (any, error) {
		return map[string]bool{"STRIPE_KEY": c.Config()["STRIPE_KEY"] == stripeCanary}, nil
	})
	agents := sortie.Agents{"refcheck": {Name: "refcheck", Version: "1", Runtime: "go:refcheck"}}
	fn, err := awshost.Function(t.Context(), env, reg, agents, nil)
	if err != nil {
		t.Fatalf("Function(worker mode with config refs) = %v", err)
	}
	h, err := awshost.Open(t.Context(), awshost.Config{Table: table, DynamoEndpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c := &capture{invs: make(chan *sortie.Invocation, 1)}
	e := sortie.NewEngine(h.ControlPlane, c, agents, &sortie.EngineOptions{ConfigRefs: env.ConfigRefs})
	defer e.Close()
	run, err := e.Submit(t.Context(), &sortie.SubmitRequest{Agent: "refcheck", ConfigRefs: []string{"stripe"}})
	if err != nil {
		t.Fatalf("Submit(config_refs [stripe]) = %v", err)
	}
	var inv *sortie.Invocation
	select {
	case inv = <-c.invs:
	case <-time.After(30 * time.Second):
		t.Fatal("no launch within 30 s")
	}
	if len(store.Asked()) != 0 {
		t.Fatalf("Secrets Manager asked %v before the attempt executed", store.Asked())
	}
	event, _ := json.Marshal(inv)
	if _, err := fn(t.Context(), event); err != nil {
		t.Fatalf("the worker function's handler = %v", err)
	}
	done, err := h.ControlPlane.Get(t.Context(), run.ID)
	if err != nil || done.State != sortie.StateCompleted || string(done.Result) != `{"STRIPE_KEY":true}` {
		t.Fatalf("run after the worker function = %+v, %v; want completed with the handler having seen the value", done, err)
	}
	if asked := store.Asked(); len(asked) != 1 || asked[0] != stripeARN {
		t.Errorf("Secrets Manager asked %v, want the secret once", asked)
	}
	if b, _ := json.Marshal(done); strings.Contains(string(b), stripeCanary) {
		t.Errorf("the stored run holds the referenced value")
	}
}
