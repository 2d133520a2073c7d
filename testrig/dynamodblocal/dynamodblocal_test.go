package dynamodblocal_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/sortie-run/sortie/testrig/dynamodblocal"
)

// Start runs a server that answers SDK calls on loopback; Stop ends it.
func TestStartAnswersAndStops(t *testing.T) {
	srv, err := dynamodblocal.Start(context.Background())
	if err != nil {
		t.Fatalf("Start = %v, want a running DynamoDB Local (run `%s`)", err, dynamodblocal.Install)
	}
	db := dynamodb.NewFromConfig(srv.Config())
	if _, err := db.ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
		t.Errorf("ListTables on %s = %v, want success", srv.Endpoint, err)
	}
	srv.Stop()
	srv.Stop() // harmless
	if resp, err := http.Post(srv.Endpoint, "application/x-amz-json-1.0", nil); err == nil {
		resp.Body.Close()
		t.Errorf("POST %s after Stop answered %s, want a refused connection", srv.Endpoint, resp.Status)
	}
}
