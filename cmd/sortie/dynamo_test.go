package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/sortie-run/sortie/testrig/dynamodblocal"
)

// sortie dynamo create-table makes the table controlplane/dynamo expects,
// on DynamoDB Local, and refuses to make it twice unless --if-missing.
func TestDynamoCreateTable(t *testing.T) {
	srv, err := dynamodblocal.Start(context.Background())
	if err != nil {
		t.Fatalf("start DynamoDB Local: %v", err)
	}
	defer srv.Stop()
	c := newCLI(t)
	run := func(args ...string) result {
		t.Helper()
		cmd := c.cmd(append([]string{"dynamo", "create-table", "--endpoint", srv.Endpoint, "--region", dynamodblocal.Region}, args...)...)
		cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID="+dynamodblocal.AccessKeyID,
			"AWS_SECRET_ACCESS_KEY="+dynamodblocal.SecretAccessKey, "AWS_EC2_METADATA_DISABLED=true", "SORTIE_DYNAMO_TABLE=", "SORTIE_DYNAMODB_TABLE=", "SORTIE_DYNAMODB_ENDPOINT=")
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return result{code, out.String(), errb.String()}
	}
	if r := run(); r.code != 2 || !strings.Contains(r.stderr, "--table") {
		t.Errorf("sortie dynamo create-table without --table = exit %d, %q, want 2 naming --table", r.code, r.stderr)
	}
	if r := run("--table", "sortie-runs"); r.code != 0 || r.stdout != "created table sortie-runs\n" {
		t.Fatalf("sortie dynamo create-table --table sortie-runs = exit %d, %q %q, want 0 and a confirmation", r.code, r.stdout, r.stderr)
	}
	db := dynamodb.NewFromConfig(srv.Config())
	out, err := db.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String("sortie-runs")})
	if err != nil {
		t.Fatalf("DescribeTable(sortie-runs) = %v", err)
	}
	var got, want []string
	for _, g := range out.Table.GlobalSecondaryIndexes {
		got = append(got, *g.IndexName)
	}
	for _, g := range dynamo.TableDefinition("sortie-runs").GlobalSecondaryIndexes {
		want = append(want, *g.IndexName)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("indexes of the created table = %v, want %v", got, want)
	}
	if r := run("--table", "sortie-runs"); r.code != 1 || !strings.Contains(r.stderr, "ResourceInUseException") {
		t.Errorf("create-table again = exit %d, %q, want 1 saying the table exists", r.code, r.stderr)
	}
	if r := run("--table", "sortie-runs", "--if-missing"); r.code != 0 || r.stdout != "table sortie-runs exists\n" {
		t.Errorf("create-table --if-missing again = exit %d, %q %q, want 0", r.code, r.stdout, r.stderr)
	}
	reindex := c.cmd("dynamo", "reindex", "--endpoint", srv.Endpoint, "--region", dynamodblocal.Region, "--table", "sortie-runs")
	reindex.Env = append(reindex.Env, "AWS_ACCESS_KEY_ID="+dynamodblocal.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+dynamodblocal.SecretAccessKey, "AWS_EC2_METADATA_DISABLED=true")
	if r := runCmd(t, reindex); r.code != 0 || r.stdout != "moved 0 runs of table sortie-runs\n" {
		t.Errorf("sortie dynamo reindex of a new table = exit %d, %q %q, want 0 runs moved", r.code, r.stdout, r.stderr)
	}
	// The table and endpoint from the environment, as the other commands take them.
	cmd := c.cmd("dynamo", "create-table", "--region", dynamodblocal.Region)
	cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID="+dynamodblocal.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+dynamodblocal.SecretAccessKey,
		"AWS_EC2_METADATA_DISABLED=true", "SORTIE_DYNAMODB_TABLE=from-env", "SORTIE_DYNAMODB_ENDPOINT="+srv.Endpoint)
	if r := runCmd(t, cmd); r.code != 0 || r.stdout != "created table from-env\n" {
		t.Errorf("create-table with SORTIE_DYNAMODB_TABLE and SORTIE_DYNAMODB_ENDPOINT = exit %d, %q %q, want 0", r.code, r.stdout, r.stderr)
	}
	// serve refuses to start on a control plane it cannot read.
	cmd = c.cmd("serve", "--listen", "127.0.0.1:0", "--dynamodb-table", "missing-table", "--dynamodb-endpoint", srv.Endpoint, "--lambda-function", "f")
	cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID="+dynamodblocal.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+dynamodblocal.SecretAccessKey,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_REGION="+dynamodblocal.Region, "SORTIE_PAGE_TOKEN_KEY="+testPageTokenKey)
	if r := runCmd(t, cmd); r.code == 0 || !strings.Contains(r.stderr, "control plane cannot be read") {
		t.Errorf("serve on a missing table = exit %d, %q; want a refusal at start", r.code, r.stderr)
	}
	// serve on DynamoDB refuses to start without the deployment's page-token key.
	cmd = c.cmd("serve", "--listen", "127.0.0.1:0", "--dynamodb-table", "sortie-runs", "--dynamodb-endpoint", srv.Endpoint, "--lambda-function", "f")
	cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID="+dynamodblocal.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+dynamodblocal.SecretAccessKey,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_REGION="+dynamodblocal.Region, "SORTIE_PAGE_TOKEN_KEY=", "SORTIE_PAGE_TOKEN_KEY_SEALED=")
	if r := runCmd(t, cmd); r.code == 0 || !strings.Contains(r.stderr, "SORTIE_PAGE_TOKEN_KEY") {
		t.Errorf("serve on DynamoDB without a page-token key = exit %d, %q; want a refusal naming SORTIE_PAGE_TOKEN_KEY", r.code, r.stderr)
	}
}

// sortie --dynamodb-table list pages across invocations with the
// deployment's page-token key from the environment: the second command
// takes the first one's token; without the key list is refused before
// anything is read, and with another key the token is refused as another
// deployment's.
func TestDynamoListPagesAcrossInvocations(t *testing.T) {
	srv, err := dynamodblocal.Start(context.Background())
	if err != nil {
		t.Fatalf("start DynamoDB Local: %v", err)
	}
	defer srv.Stop()
	db := dynamodb.NewFromConfig(srv.Config())
	if err := dynamo.CreateTable(t.Context(), db, "paged"); err != nil {
		t.Fatalf("CreateTable = %v", err)
	}
	cp, err := dynamo.New(db, "paged", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		run := controlplanetest.NewRun(controlplanetest.T0 + int64(i))
		if _, _, err := cp.Reserve(t.Context(), &sortie.Reservation{Run: run, NowMs: controlplanetest.T0 + int64(i)}); err != nil {
			t.Fatalf("Reserve = %v", err)
		}
	}
	c := newCLI(t)
	list := func(key string, args ...string) result {
		cmd := c.cmd(append([]string{"--dynamodb-table", "paged", "--dynamodb-endpoint", srv.Endpoint, "list", "--json"}, args...)...)
		cmd.Env = append(cmd.Env, append(awsCredentials(), "SORTIE_PAGE_TOKEN_KEY="+key, "SORTIE_PAGE_TOKEN_KEY_SEALED=")...)
		return runCmd(t, cmd)
	}
	key := base64.StdEncoding.EncodeToString([]byte("a key all this deployment shares"))
	first := list(key, "--page-size", "2")
	var page sortie.RunPage
	if first.code != 0 || json.Unmarshal([]byte(first.stdout), &page) != nil || len(page.Runs) != 2 || page.NextPageToken == "" {
		t.Fatalf("list --page-size 2 = exit %d, %q %q; want two runs and a next page token", first.code, first.stdout, first.stderr)
	}
	second := list(key, "--page-size", "2", "--page-token", page.NextPageToken)
	var next sortie.RunPage
	if second.code != 0 || json.Unmarshal([]byte(second.stdout), &next) != nil || len(next.Runs) != 1 || next.NextPageToken != "" {
		t.Errorf("list --page-token (another invocation) = exit %d, %q %q; want the third run", second.code, second.stdout, second.stderr)
	}
	if r := list(""); r.code != 2 || !strings.Contains(r.stderr, "SORTIE_PAGE_TOKEN_KEY") {
		t.Errorf("list without a page-token key = exit %d, %q; want 2 naming SORTIE_PAGE_TOKEN_KEY", r.code, r.stderr)
	}
	other := base64.StdEncoding.EncodeToString([]byte("the key of another deployment!!!"))
	if r := list(other, "--page-token", page.NextPageToken); r.code != 2 || !strings.Contains(r.stderr, "another deployment") {
		t.Errorf("list with another deployment's key and this token = exit %d, %q; want 2 naming another deployment", r.code, r.stderr)
	}
}
