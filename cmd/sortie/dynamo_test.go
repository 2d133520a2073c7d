package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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
		"AWS_EC2_METADATA_DISABLED=true", "AWS_REGION="+dynamodblocal.Region)
	if r := runCmd(t, cmd); r.code == 0 || !strings.Contains(r.stderr, "control plane cannot be read") {
		t.Errorf("serve on a missing table = exit %d, %q; want a refusal at start", r.code, r.stderr)
	}
}
