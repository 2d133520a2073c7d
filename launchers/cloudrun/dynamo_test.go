package cloudrun_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/testrig/awsfed"
	"github.com/sortie-run/sortie/testrig/dynamodblocal"
)

var (
	ddbOnce sync.Once
	ddb     *dynamodblocal.Server
	ddbErr  error
)

// dynamoLocal starts DynamoDB Local on first use; TestMain stops it.
func dynamoLocal(tb testing.TB) *dynamodblocal.Server {
	tb.Helper()
	ddbOnce.Do(func() { ddb, ddbErr = dynamodblocal.Start(context.Background()) })
	if ddbErr != nil {
		tb.Fatalf("DynamoDB Local: %v", ddbErr)
	}
	return ddb
}

func stopDynamoLocal() {
	if ddb != nil {
		ddb.Stop()
	}
}

// newTable creates a fresh table on DynamoDB Local and returns its name
// and a control plane on it.
func newTable(t *testing.T, srv *dynamodblocal.Server) (string, *dynamo.ControlPlane) {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	table := "sortie-cloudrun-" + hex.EncodeToString(b)
	db := dynamodb.NewFromConfig(srv.Config())
	if err := dynamo.CreateTable(context.Background(), db, table); err != nil {
		t.Fatalf("CreateTable(%s) = %v", table, err)
	}
	cp, err := dynamo.New(db, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	return table, cp
}

// runOnTable runs a probe run on a job whose containers get env, and
// checks it completed on the table of cp.
func runOnTable(t *testing.T, cp *dynamo.ControlPlane, env []string) {
	t.Helper()
	fake := startFakeEnv(t, append(env, fncloudrun.EnvLogLevel+"=warn"))
	r := &rig{fake: fake, launcher: jobsLauncher(t, fake)}
	e := sortie.NewEngine(cp, r.launcher, probeAgents, &sortie.EngineOptions{DefaultPolicy: testPolicy})
	t.Cleanup(func() { e.Close() })
	// A lease of 10 s, not testPolicy's 1 s: on a loaded machine a
	// heartbeat to DynamoDB Local can take longer than a second, and the
	// worker then rightly stops before its lease ends (this test is
	// about reaching the table, not about fencing).
	run := submit(t, e, map[string]any{"events": 3, "output": "from dynamo"}, sortie.Policy{HeartbeatMs: 1000, LeaseMs: 10000})
	run = waitRun(t, e, run.ID, "the run to settle", false, settled)
	evs, err := cp.Events(context.Background(), run.ID, sortie.Cursor{}, 10)
	if run.State != sortie.StateCompleted || string(run.Result) != `"from dynamo"` || err != nil || len(evs) != 3 {
		t.Fatalf("run = %s %q result %s with %d events (%v); want completed with \"from dynamo\" and 3 events", run.State, run.Reason, run.Result, len(evs), err)
	}
}

// A Cloud Run job whose container reports to the DynamoDB control plane
// (SORTIE_DYNAMODB_TABLE) with an access key in its environment completes
// a run the engine reads from the table.
func TestJobOnDynamoDB(t *testing.T) {
	srv := dynamoLocal(t)
	table, cp := newTable(t, srv)
	runOnTable(t, cp, []string{
		fncloudrun.EnvDynamoTable + "=" + table, fncloudrun.EnvDynamoEndpoint + "=" + srv.Endpoint,
		"AWS_REGION=" + dynamodblocal.Region, "AWS_ACCESS_KEY_ID=" + dynamodblocal.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + dynamodblocal.SecretAccessKey, "AWS_EC2_METADATA_DISABLED=true"})
}

// With SORTIE_AWS_ROLE_ARN and no AWS key anywhere, the container gets an
// ID token of its service account from the metadata server, exchanges it
// at STS for the role's credentials and reaches the table with them
// (DynamoDB Local keeps tables per access key, so only the issued key
// sees this one).
func TestJobOnDynamoDBWithFederation(t *testing.T) {
	srv := dynamoLocal(t)
	table, cp := newTable(t, srv)
	md := awsfed.StartMetadata(t)
	sts := awsfed.StartSTS(t, awsfed.STSOptions{AccessKeyID: dynamodblocal.AccessKeyID,
		Check: func(tok string) error { return md.Check(tok, fncloudrun.DefaultAWSTokenAudience) }})
	const role = "arn:aws:iam::111122223333:role/sortie-cloudrun-worker"
	runOnTable(t, cp, []string{
		fncloudrun.EnvDynamoTable + "=" + table, fncloudrun.EnvDynamoEndpoint + "=" + srv.Endpoint,
		fncloudrun.EnvAWSRoleARN + "=" + role, "AWS_REGION=" + dynamodblocal.Region,
		"GCE_METADATA_HOST=" + md.Host, "AWS_ENDPOINT_URL_STS=" + sts.Endpoint, "AWS_EC2_METADATA_DISABLED=true"})
	calls := sts.Calls()
	if len(calls) == 0 || calls[0].RoleARN != role || calls[0].Issued == "" || !strings.HasPrefix(calls[0].SessionName, "sortie-probe-") {
		t.Errorf("STS calls = %+v, want AssumeRoleWithWebIdentity of %s issuing credentials, session sortie-EXECUTION", calls, role)
	}
}
