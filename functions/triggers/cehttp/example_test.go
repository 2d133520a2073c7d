package cehttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/cehttp"
)

// printer is a Submitter that prints what it is asked to start.
type printer struct{}

func (printer) SubmitCreated(_ context.Context, req *sortie.SubmitRequest) (*sortie.Run, bool, error) {
	fmt.Println(req.Agent, req.IdempotencyKey, string(req.Variables))
	return &sortie.Run{ID: "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, true, nil
}

func ExampleNewHandler() {
	rules, err := triggers.ParseRules([]byte(`{"version": "sortie.triggers/v1", "rules": [
	  {"name": "uploads", "agent": "indexer",
	   "match": {"type": "google.cloud.storage.object.v1.finalized", "fields": {"data.name": "uploads/*"}},
	   "variables": {"object": "${data.bucket}/${data.name}"}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	// In the Cloud Run binary: http.Handle("/events", cehttp.NewHandler(router, nil)).
	srv := httptest.NewServer(cehttp.NewHandler(triggers.NewRouter(rules, printer{}, nil), nil))
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"bucket":"b","name":"uploads/a.csv"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("ce-specversion", "1.0")
	req.Header.Set("ce-id", "42")
	req.Header.Set("ce-source", "//storage.googleapis.com/projects/_/buckets/b")
	req.Header.Set("ce-type", "google.cloud.storage.object.v1.finalized")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output:
	// indexer trigger/uploads/cloudevents:45://storage.googleapis.com/projects/_/buckets/b42 {"object":"b/uploads/a.csv"}
	// 200 OK
}
