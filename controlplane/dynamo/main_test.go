package dynamo_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/sortie-run/sortie/testrig/dynamodblocal"
)

// server is the DynamoDB Local every test of the package shares; each test
// makes its own table.
var server *dynamodblocal.Server

func TestMain(m *testing.M) {
	s, err := dynamodblocal.Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane/dynamo tests need DynamoDB Local:", err)
		os.Exit(1)
	}
	server = s
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

// newClient returns a new DynamoDB client of the test server, as another
// process would make one.
func newClient() *dynamodb.Client {
	return dynamodb.NewFromConfig(server.Config())
}

// newTable creates a table with a random name for t and deletes it when t ends.
func newTable(t testing.TB) (*dynamodb.Client, string) {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	table := "sortie-test-" + hex.EncodeToString(b)
	db := newClient()
	if err := dynamo.CreateTable(context.Background(), db, table); err != nil {
		t.Fatalf("CreateTable(%s) = %v, want success", table, err)
	}
	t.Cleanup(func() {
		db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	return db, table
}

// open returns a control plane on table, closed when t ends.
func open(t testing.TB, db dynamo.API, table string, opts *dynamo.Options) *dynamo.ControlPlane {
	t.Helper()
	cp, err := dynamo.New(db, table, opts)
	if err != nil {
		t.Fatalf("dynamo.New(%s) = %v, want success", table, err)
	}
	t.Cleanup(func() { cp.Close() })
	return cp
}
