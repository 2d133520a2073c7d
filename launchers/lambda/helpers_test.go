package lambda_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/awskms"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/testrig/localkms"
)

// probeAgents is the catalog of the tests' engines.
var probeAgents = sortie.Agents{"probe": {Name: "probe", Version: "1", Runtime: "go:probe"}}

// testPolicy is the default policy of the tests' runs, in ms.
var testPolicy = sortie.Policy{HeartbeatMs: 200, LeaseMs: 2000, BackoffMs: 50}

// newEngine returns an engine over cp and l that seals inline
// configuration with the local-kms key the function's keyring names
// "test-key"; closed when tb ends.
func newEngine(tb testing.TB, cp sortie.ControlPlane, l sortie.Launcher) *sortie.Engine {
	tb.Helper()
	e := sortie.NewEngine(cp, l, probeAgents, &sortie.EngineOptions{DefaultPolicy: testPolicy,
		Sealer: testKeyring(tb), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tb.Cleanup(func() { _ = e.Close() })
	return e
}

// testKeyring seals and opens with the local-kms key the function's
// keyring names "test-key".
func testKeyring(tb testing.TB) *envelope.Config {
	tb.Helper()
	client := kms.New(kms.Options{Region: localkms.Region, BaseEndpoint: aws.String(kmsd.Endpoint), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCALKMS", "local-kms-test-secret", "")})
	kek, err := awskms.New(client, localkms.ARN(localkms.KeyA))
	if err != nil {
		tb.Fatalf("awskms.New = %v, want nil", err)
	}
	ring, err := envelope.NewKeyring("test-key", kek)
	if err != nil {
		tb.Fatalf("NewKeyring = %v, want nil", err)
	}
	return envelope.NewConfig(envelope.New(ring, nil))
}

// submit submits a probe run with vars.
func submit(tb testing.TB, e *sortie.Engine, vars map[string]any, policy sortie.Policy, config json.RawMessage) *sortie.Run {
	tb.Helper()
	b, _ := json.Marshal(vars)
	run, err := e.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe", Variables: b, Policy: policy, Config: config})
	if err != nil {
		tb.Fatalf("Submit(probe %s) = %v, want nil", b, err)
	}
	return run
}

// waitRun reads the run until cond holds (at most 60 s) and returns it.
func waitRun(tb testing.TB, cp sortie.ControlPlane, id sortie.RunID, what string, cond func(*sortie.Run) bool) *sortie.Run {
	tb.Helper()
	var run *sortie.Run
	testwait.UntilReport(tb, what+" of run "+string(id), 60*time.Second, func() (bool, string) {
		var err error
		if run, err = cp.Get(context.Background(), id); err != nil {
			tb.Fatalf("Get(%s) = %v, want nil", id, err)
		}
		return cond(run), fmt.Sprintf("state %s reason %q", run.State, run.Reason)
	})
	return run
}

func settled(r *sortie.Run) bool { return r.State.Terminal() || r.State.Interrupted() }
