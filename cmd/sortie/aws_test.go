package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/internal/lambdarig"
	"github.com/sortie-run/sortie/testrig/dynamodblocal"
	"github.com/sortie-run/sortie/testrig/localkms"
)

// awsRig is the real AWS stand-ins of the AWS host tests: DynamoDB Local
// with a table, local-kms, and the sortie-lambda bootstrap in worker mode
// under the Lambda Runtime Interface Emulator, reporting to that table.
type awsRig struct {
	table string
	ddb   *dynamodblocal.Server
	kms   *localkms.Server
	rie   *lambdarig.RIE
}

// awsCredentials are the dummy credentials every process uses: DynamoDB
// Local keeps tables per access key and region. One try per call (the
// emulator takes one invocation at a time).
func awsCredentials() []string {
	return []string{"AWS_REGION=" + dynamodblocal.Region, "AWS_ACCESS_KEY_ID=" + dynamodblocal.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + dynamodblocal.SecretAccessKey, "AWS_SESSION_TOKEN=", "AWS_PROFILE=",
		"AWS_MAX_ATTEMPTS=1", "AWS_EC2_METADATA_DISABLED=true", "SORTIE_PAGE_TOKEN_KEY=" + testPageTokenKey}
}

// testPageTokenKey is the page-token key of the tests' deployments.
const testPageTokenKey = "dGhlIHRlc3RzJyBwYWdlLXRva2VuIGtleSwgMzIgYnl0ZXM="

func startAWSRig(t *testing.T) *awsRig {
	t.Helper()
	dir := t.TempDir()
	bins, err := lambdarig.Build(dir)
	if err != nil {
		t.Fatalf("lambdarig.Build: %v", err)
	}
	r := &awsRig{table: "sortie-cli-aws"}
	if r.ddb, err = dynamodblocal.Start(context.Background()); err != nil {
		t.Fatalf("start DynamoDB Local: %v", err)
	}
	t.Cleanup(r.ddb.Stop)
	if err := dynamo.CreateTable(t.Context(), dynamodb.NewFromConfig(r.ddb.Config()), r.table); err != nil {
		t.Fatalf("CreateTable(%s) = %v, want nil", r.table, err)
	}
	if r.kms, err = localkms.Start(bins.KMS, filepath.Join(dir, "kms-data")); err != nil {
		t.Fatalf("start local-kms: %v", err)
	}
	t.Cleanup(r.kms.Stop)
	env := append([]string{fnlambda.EnvTable + "=" + r.table, fnlambda.EnvDynamoEndpoint + "=" + r.ddb.Endpoint,
		fnlambda.EnvKMSEndpoint + "=" + r.kms.Endpoint, fnlambda.EnvKMSKeys + "=" + r.keyring(),
		fnlambda.EnvConfigEnv + "=API_TOKEN", fnlambda.EnvLogLevel + "=warn"}, awsCredentials()...)
	if r.rie, err = lambdarig.StartRIE(bins.RIE, bins.Bootstrap, 60, env); err != nil {
		t.Fatalf("StartRIE: %v", err)
	}
	t.Cleanup(func() {
		r.rie.Stop()
		if t.Failed() {
			t.Logf("emulator output:\n%s", r.rie.Output())
		}
	})
	return r
}

// keyring is the worker function's keyring, which the host seals with.
func (r *awsRig) keyring() string { return "test-key=" + localkms.ARN(localkms.KeyA) }

// tableFlags are the global flags naming the table.
func (r *awsRig) tableFlags() []string {
	return []string{"--dynamodb-table", r.table, "--dynamodb-endpoint", r.ddb.Endpoint}
}

// sortie serve on the DynamoDB control plane with the Lambda launcher: a
// run submitted over --host runs in the worker function (its inline
// configuration sealed with the KMS keyring and opened there), and another
// process with only --dynamodb-table reads the same run from the table.
// serve's state directory holds no embedded control plane.
func TestServeOnAWS(t *testing.T) {
	r := startAWSRig(t)
	c := newCLI(t)
	url := startServeCmd(t, c, awsCredentials(), append(r.tableFlags(), "--lambda-function", "function",
		"--lambda-endpoint", r.rie.Endpoint, "--kms-keys", r.keyring(), "--kms-endpoint", r.kms.Endpoint)...)

	secrets := filepath.Join(t.TempDir(), "secrets.json")
	b := make([]byte, 12)
	rand.Read(b)
	canary := "canary-" + hex.EncodeToString(b)
	if err := os.WriteFile(secrets, []byte(`{"API_TOKEN":"`+canary+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	remote := &cli{t: t, state: t.TempDir()}
	out := runCmd(t, remote.cmd("--host", url, "run", "probe", "--var", "events=2", "--config-file", secrets, "--json"))
	if out.code != 0 {
		t.Fatalf("sortie --host %s run probe --var events=2: exit %d\nstderr: %s", url, out.code, out.stderr)
	}
	events, final := jsonLines(t, out.stdout)
	if len(events) != 2 || final == nil || final.State != sortie.StateCompleted {
		t.Fatalf("run probe printed %d events and run %+v, want 2 events and the completed run", len(events), final)
	}
	checkContiguous(t, events)

	direct := &cli{t: t, state: t.TempDir()}
	cmd := direct.cmd(append(r.tableFlags(), "get", string(final.ID), "--json")...)
	cmd.Env = append(cmd.Env, awsCredentials()...)
	got := runCmd(t, cmd)
	var run sortie.Run
	if got.code != 0 || json.Unmarshal([]byte(got.stdout), &run) != nil {
		t.Fatalf("sortie --dynamodb-table %s get %s --json = exit %d, %q %q; want the run", r.table, final.ID, got.code, got.stdout, got.stderr)
	}
	type view struct {
		ID       sortie.RunID
		State    sortie.State
		Result   string
		Attempts int
	}
	want := view{final.ID, sortie.StateCompleted, string(final.Result), 1}
	if diff := cmp.Diff(want, view{run.ID, run.State, string(run.Result), len(run.Attempts)}); diff != "" {
		t.Errorf("the run read from the table (-want +got):\n%s", diff)
	}
	a := run.Current()
	if a.Usage == nil || a.Usage.KMSRequests < 1 || a.Usage.MemoryMB != 512 {
		t.Errorf("attempt 1 Usage = %+v, want MemoryMB 512 (run in the function) and KMSRequests ≥ 1 (configuration opened through KMS)", a.Usage)
	}
	if !strings.HasPrefix(a.Owner, "lambda:function/") {
		t.Errorf("attempt 1 Owner = %q, want lambda:function/REQUEST_ID (claimed in the worker function)", a.Owner)
	}
	if strings.Contains(got.stdout, canary) || strings.Contains(out.stdout, canary) {
		t.Errorf("the configuration's secret is in the printed run or events, want it sealed")
	}
	cmd = direct.cmd(append(r.tableFlags(), "get", string(sortie.NewRunID(time.Now())))...)
	cmd.Env = append(cmd.Env, awsCredentials()...)
	if missing := runCmd(t, cmd); missing.code != 2 {
		t.Errorf("sortie --dynamodb-table get of an unknown run = exit %d, %q; want 2 as on the embedded engine", missing.code, missing.stderr)
	}
	if _, err := os.Stat(filepath.Join(c.state, "sortie.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(serve's state dir/sortie.db) = %v, want it absent: runs live in the table", err)
	}
}

// The AWS flags refuse what cannot work, naming the flags, before anything
// is opened (exit 2).
func TestAWSFlagsUsage(t *testing.T) {
	c := newCLI(t)
	table := []string{"--dynamodb-table", "runs", "--dynamodb-endpoint", "http://127.0.0.1:9"}
	cases := []usageCase{
		{[]string{"--lambda-function", "function", "list"}, []string{"--lambda-function", "--dynamodb-table"}},
		{[]string{"--kms-keys", "k=arn", "list"}, []string{"--kms-keys", "--dynamodb-table"}},
		{append(table, "run", "probe"), []string{"sortie run", "--dynamodb-table", "--lambda-function"}},
		{append(table, "serve", "--listen", "127.0.0.1:0"), []string{"sortie serve", "--lambda-function"}},
		{append(table, "--host", "http://127.0.0.1:9", "get", "r"), []string{"--host", "--dynamodb-table"}},
		{append(table, "--kms-keys", "no-equals", "get", "r"), []string{"--kms-keys", "no-equals"}},
		{append(table, "--in-process", "--lambda-function", "f", "run", "probe"), []string{"--in-process"}},
		{append(table, "worker"), []string{"sortie worker", "--dynamodb-table"}},
	}
	wantUsage(t, c, cases)
}

// usageCase is a command line that must fail with a usage error (exit 2)
// whose message has every string of want.
type usageCase struct {
	args []string
	want []string
}

// wantUsage runs each case with AWS credentials in the environment.
func wantUsage(t *testing.T, c *cli, cases []usageCase) {
	t.Helper()
	for _, tc := range cases {
		cmd := c.cmd(tc.args...)
		cmd.Env = append(cmd.Env, awsCredentials()...)
		cmd.Stdin = strings.NewReader("")
		r := runCmd(t, cmd)
		named := true
		for _, w := range tc.want {
			named = named && strings.Contains(r.stderr, w)
		}
		if r.code != 2 || !named {
			t.Errorf("sortie %s = exit %d, stderr %q; want exit 2 naming %v", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}
}
