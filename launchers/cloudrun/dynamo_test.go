package cloudrun_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
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

// A Cloud Run job whose container reports to the DynamoDB control plane
// (SORTIE_DYNAMODB_TABLE) completes a run the engine reads from the table.
func TestJobOnDynamoDB(t *testing.T) {
	srv := dynamoLocal(t)
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
	fake := startFakeEnv(t, []string{
		fncloudrun.EnvDynamoTable + "=" + table, fncloudrun.EnvDynamoEndpoint + "=" + srv.Endpoint,
		"AWS_REGION=" + dynamodblocal.Region, "AWS_ACCESS_KEY_ID=" + dynamodblocal.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + dynamodblocal.SecretAccessKey, "AWS_EC2_METADATA_DISABLED=true",
		fncloudrun.EnvLogLevel + "=warn"})
	r := &rig{fake: fake, launcher: jobsLauncher(t, fake)}
	e := sortie.NewEngine(cp, r.launcher, probeAgents, &sortie.EngineOptions{DefaultPolicy: testPolicy})
	t.Cleanup(func() { e.Close() })
	run := submit(t, e, map[string]any{"events": 3, "output": "from dynamo"}, sortie.Policy{})
	run = waitRun(t, e, run.ID, "the run to settle", false, settled)
	evs, err := cp.Events(context.Background(), run.ID, sortie.Cursor{}, 10)
	if run.State != sortie.StateCompleted || string(run.Result) != `"from dynamo"` || err != nil || len(evs) != 3 {
		t.Fatalf("run = %s result %s with %d events (%v); want completed with \"from dynamo\" and 3 events", run.State, run.Result, len(evs), err)
	}
}
