package awshost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/testrig/dynamodblocal"
	"github.com/sortie-run/sortie/testrig/localkms"
)

func TestMain(m *testing.M) { os.Exit(localkms.Main(m)) }

// useDynamoDBLocal starts DynamoDB Local with a table and points the AWS
// configuration Open loads at its dummy credentials.
func useDynamoDBLocal(t *testing.T) (endpoint, table string) {
	t.Helper()
	srv, err := dynamodblocal.Start(t.Context())
	if err != nil {
		t.Fatalf("start DynamoDB Local: %v", err)
	}
	t.Cleanup(srv.Stop)
	table = "sortie-awshost"
	if err := dynamo.CreateTable(t.Context(), dynamodb.NewFromConfig(srv.Config()), table); err != nil {
		t.Fatalf("CreateTable(%s) = %v", table, err)
	}
	for k, v := range map[string]string{"AWS_REGION": dynamodblocal.Region, "AWS_ACCESS_KEY_ID": dynamodblocal.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY": dynamodblocal.SecretAccessKey, "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_MAX_ATTEMPTS": "1", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	return srv.Endpoint, table
}

// capture is a launcher that keeps the invocations it is handed.
type capture struct{ invs chan *sortie.Invocation }

func (c *capture) Start(_ context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	c.invs <- inv
	return sortie.Ref{Provider: "test", ID: inv.LaunchID, RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
}

// A host opened on a table and a KMS keyring keeps runs in the table and
// seals their configuration with the keyring: the invocation's envelope
// opens with the same keyring (as the worker function opens it), and the
// stored run, read by another host on the table, holds no plaintext.
func TestOpenSealsWithTheKeyringIntoTheTable(t *testing.T) {
	endpoint, table := useDynamoDBLocal(t)
	cfg := awshost.Config{Table: table, DynamoEndpoint: endpoint,
		KMSKeys: [][2]string{{"k1", localkms.ARN(localkms.KeyA)}}, KMSEndpoint: localkms.Shared(t).Endpoint}
	h, err := awshost.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open(%+v) = %v", cfg, err)
	}
	defer h.Close()
	c := &capture{invs: make(chan *sortie.Invocation, 1)}
	e := sortie.NewEngine(h.ControlPlane, c, builtin.Agents(), &sortie.EngineOptions{Sealer: h.Sealer()})
	defer e.Close()
	const secret = "awshost-canary-5d1f"
	run, err := e.Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Config: json.RawMessage(`{"API_TOKEN":"` + secret + `"}`)})
	if err != nil {
		t.Fatalf("Submit with configuration = %v", err)
	}
	var inv *sortie.Invocation
	select {
	case inv = <-c.invs:
	case <-time.After(30 * time.Second):
		t.Fatal("no launch within 30 s")
	}
	plain, _, err := h.Sealer().Open(t.Context(), inv)
	if err != nil || !bytes.Contains(plain, []byte(secret)) {
		t.Fatalf("Sealer().Open(invocation) = %q, %v; want the configuration", plain, err)
	}
	other, err := awshost.Open(t.Context(), awshost.Config{Table: table, DynamoEndpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	stored, err := other.ControlPlane.Get(t.Context(), run.ID)
	if err != nil || stored.ID != run.ID {
		t.Fatalf("another host's Get(%s) = %v, %v; want the run", run.ID, stored, err)
	}
	if b, _ := json.Marshal(stored); bytes.Contains(b, []byte(secret)) || len(stored.SealedConfig) == 0 {
		t.Errorf("the stored run holds the plaintext or no sealed configuration: %s", b)
	}
	if other.Sealer() != nil {
		t.Errorf("Sealer() of a host without KMSKeys = %v, want nil (inline configuration off)", other.Sealer())
	}
}

// Without a worker function the host launches nothing, and says which
// field is missing; the Lambda function names the variable instead.
func TestEngineNeedsFunction(t *testing.T) {
	h, err := awshost.Open(t.Context(), awshost.Config{Table: "runs"})
	if err != nil {
		t.Fatalf("Open(Table: runs) = %v", err)
	}
	defer h.Close()
	e, err := h.Engine(builtin.Agents(), sortie.EngineOptions{})
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "Function" || e != nil {
		t.Errorf("Engine without Function = %v, %v; want nil and a *sortie.ValidationError naming Function", e, err)
	}
	if _, err := awshost.Open(t.Context(), awshost.Config{}); !errors.As(err, &ve) || ve.Field != "Table" {
		t.Errorf("Open(Config{}) = %v, want a *sortie.ValidationError naming Table", err)
	}
	env := &fnlambda.Env{Mode: fnlambda.ModeTrigger, Table: "runs", TriggerRules: "../../examples/triggers/rules.json"}
	if _, err := awshost.Function(t.Context(), env, builtin.Registry(), builtin.Agents(), nil); !errors.As(err, &ve) || ve.Field != fnlambda.EnvWorkerFunction {
		t.Errorf("Function(trigger mode without a worker function) = %v, want a *sortie.ValidationError naming %s", err, fnlambda.EnvWorkerFunction)
	}
}

// The reconciler and trigger functions refuse, at start, a payload
// bucket URL their URL signer cannot follow, naming the variable and the
// parameter.
func TestFunctionsRefuseABucketTheyCannotSign(t *testing.T) {
	for _, mode := range []string{fnlambda.ModeReconciler, fnlambda.ModeTrigger} {
		env := &fnlambda.Env{Mode: mode, Table: "runs", WorkerFunction: "worker", TriggerRules: "../../examples/triggers/rules.json",
			Keys:          [][2]string{{"k1", "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"}},
			PayloadBucket: "s3://payloads?region=eu-west-1&profile=dev"}
		_, err := awshost.Function(t.Context(), env, builtin.Registry(), builtin.Agents(), nil)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != fnlambda.EnvPayloadBucket || !strings.Contains(err.Error(), "profile") {
			t.Errorf("Function(%s, bucket URL with profile=) = %v, want a *sortie.ValidationError naming %s and the parameter", mode, err, fnlambda.EnvPayloadBucket)
		}
	}
}

// LambdaConfig reads the region, the execution role's credentials and
// AWS_MAX_ATTEMPTS from the runtime's environment, nothing else.
func TestLambdaConfig(t *testing.T) {
	env := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY": "s3cr3t", "AWS_SESSION_TOKEN": "tok", "AWS_MAX_ATTEMPTS": "1"}
	cfg := awshost.LambdaConfig(func(k string) string { return env[k] })
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil || cfg.Region != "eu-west-1" || cfg.RetryMaxAttempts != 1 ||
		creds.AccessKeyID != "AKIDEXAMPLE" || creds.SecretAccessKey != "s3cr3t" || creds.SessionToken != "tok" {
		t.Errorf("LambdaConfig = region %q, max attempts %d, credentials %+v (%v); want the environment's", cfg.Region, cfg.RetryMaxAttempts, creds, err)
	}
	if cfg := awshost.LambdaConfig(func(string) string { return "" }); cfg.RetryMaxAttempts != 0 {
		t.Errorf("LambdaConfig(no AWS_MAX_ATTEMPTS).RetryMaxAttempts = %d, want the SDK's default (0)", cfg.RetryMaxAttempts)
	}
}
