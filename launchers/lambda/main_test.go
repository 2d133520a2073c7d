package lambda_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/internal/lambdarig"
	"github.com/sortie-run/sortie/launchers/lambda"
	"github.com/sortie-run/sortie/testrig/dynamodblocal"
	"github.com/sortie-run/sortie/testrig/localkms"
)

// The real parts every test of the package shares: DynamoDB Local,
// local-kms and the built emulator and bootstrap. Each test starts its own
// emulator (one invocation at a time each) and makes its own table.
var (
	ddb  *dynamodblocal.Server
	kmsd *localkms.Server
	bins *lambdarig.Binaries
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sortie-lambda-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if bins, err = lambdarig.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "launchers/lambda tests: build:", err)
		return 1
	}
	if ddb, err = dynamodblocal.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "launchers/lambda tests need DynamoDB Local:", err)
		return 1
	}
	defer ddb.Stop()
	if kmsd, err = localkms.Start(bins.KMS, filepath.Join(dir, "kms-data")); err != nil {
		fmt.Fprintln(os.Stderr, "launchers/lambda tests need local-kms:", err)
		return 1
	}
	defer kmsd.Stop()
	return m.Run()
}

// newTable creates a table with a random name and returns a control plane
// on it, closed and deleted when tb ends.
func newTable(tb testing.TB) (string, *dynamo.ControlPlane) {
	tb.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	table := "sortie-lambda-" + hex.EncodeToString(b)
	db := dynamodb.NewFromConfig(ddb.Config())
	if err := dynamo.CreateTable(context.Background(), db, table); err != nil {
		tb.Fatalf("CreateTable(%s) = %v, want nil", table, err)
	}
	cp, err := dynamo.New(db, table, nil)
	if err != nil {
		tb.Fatalf("dynamo.New(%s) = %v, want nil", table, err)
	}
	tb.Cleanup(func() {
		cp.Close()
		db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	return table, cp
}

// fnEnv is the worker function's environment for table: the control
// plane on DynamoDB Local, the keyring on local-kms, the allowlist, the
// dummy credentials DynamoDB Local scopes tables by. Nothing else of the
// test process's environment.
func fnEnv(table string, extra ...string) []string {
	return append([]string{
		fnlambda.EnvTable + "=" + table,
		fnlambda.EnvDynamoEndpoint + "=" + ddb.Endpoint,
		fnlambda.EnvKMSEndpoint + "=" + kmsd.Endpoint,
		fnlambda.EnvKMSKeys + "=test-key=" + localkms.ARN(localkms.KeyA),
		fnlambda.EnvConfigEnv + "=API_TOKEN",
		fnlambda.EnvLogLevel + "=warn",
		"AWS_REGION=" + dynamodblocal.Region,
		"AWS_ACCESS_KEY_ID=" + dynamodblocal.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + dynamodblocal.SecretAccessKey,
		"AWS_MAX_ATTEMPTS=1",
		"AWS_EC2_METADATA_DISABLED=true",
	}, extra...)
}

// startRIE runs the bootstrap under a new emulator with env and a timeout
// of timeoutS seconds, stopped when tb ends; on failure it logs the output.
func startRIE(tb testing.TB, timeoutS int, env []string) *lambdarig.RIE {
	tb.Helper()
	r, err := lambdarig.StartRIE(bins.RIE, bins.Bootstrap, timeoutS, env)
	if err != nil {
		tb.Fatalf("StartRIE: %v", err)
	}
	tb.Cleanup(func() {
		r.Stop()
		if tb.Failed() {
			tb.Logf("emulator output:\n%s", r.Output())
		}
	})
	return r
}

// lambdaClient returns a Lambda client of the emulator: dummy
// credentials, one try per call (the emulator is not Lambda).
func lambdaClient(r *lambdarig.RIE) *awslambda.Client {
	return awslambda.New(awslambda.Options{
		Region:           dynamodblocal.Region,
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDRIE", "rie-test-secret", ""),
		BaseEndpoint:     aws.String(r.Endpoint),
		RetryMaxAttempts: 1,
	})
}

// newLauncher returns a launcher of the function "function" on r.
func newLauncher(tb testing.TB, r *lambdarig.RIE, opts lambda.Options) *lambda.Launcher {
	tb.Helper()
	opts.Function = "function"
	opts.Region = dynamodblocal.Region
	l, err := lambda.New(lambdaClient(r), opts)
	if err != nil {
		tb.Fatalf("lambda.New(%+v) = %v, want nil", opts, err)
	}
	return l
}

// serial makes Start calls one at a time: the emulator runs an Event
// invocation synchronously and crashes on concurrent invokes (Lambda
// itself takes them concurrently). It also injects two faults: held
// Starts (an Invoke call in flight) and a held queue (Lambda answered 202,
// as it does at once, but holds the event — throttled — and delivers it
// later, which the emulator never does).
type serial struct {
	mu sync.Mutex // one Invoke at a time
	l  *lambda.Launcher

	hold   sync.Mutex
	starts chan struct{}        // non-nil: Starts wait for it to close
	queued []*sortie.Invocation // held in the simulated queue
	queue  bool                 // new Starts go to the queue
	sent   sync.WaitGroup       // deliveries from the queue under way
}

func (s *serial) Start(ctx context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	s.hold.Lock()
	gate, queue := s.starts, s.queue
	if queue {
		s.queued = append(s.queued, inv)
	}
	s.hold.Unlock()
	if queue {
		return sortie.Ref{Provider: lambda.Provider, Resource: "function", ID: "queued:" + inv.LaunchID,
			RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return sortie.Ref{}, ctx.Err()
		}
	}
	return s.invoke(ctx, inv)
}

// MaxQueueMs forwards the launcher's [sortie.Queuer].
func (s *serial) MaxQueueMs() int64 { return s.l.MaxQueueMs() }

// MaxInvocationBytes forwards the launcher's [sortie.InvocationLimiter].
func (s *serial) MaxInvocationBytes() (int, string) { return s.l.MaxInvocationBytes() }

func (s *serial) invoke(ctx context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.l.Start(ctx, inv)
}

// holdStarts makes Starts wait until release.
func (s *serial) holdStarts() (release func()) {
	gate := make(chan struct{})
	s.hold.Lock()
	s.starts = gate
	s.hold.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.hold.Lock()
			s.starts = nil
			s.hold.Unlock()
			close(gate)
		})
	}
}

// holdQueue sends new Starts to the simulated queue until release, which
// delivers them (one Invoke each) and returns once they were delivered.
func (s *serial) holdQueue() (release func()) {
	s.hold.Lock()
	s.queue = true
	s.hold.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.hold.Lock()
			s.queue = false
			held := s.queued
			s.queued = nil
			s.sent.Add(len(held))
			s.hold.Unlock()
			for _, inv := range held {
				go func() {
					defer s.sent.Done()
					s.invoke(context.Background(), inv)
				}()
			}
			s.sent.Wait()
		})
	}
}
