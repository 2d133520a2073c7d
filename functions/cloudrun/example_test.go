package cloudrun_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sortie-run/sortie/functions/cloudrun"
)

// The container refuses to start without its control plane, naming the
// variable.
func ExampleLoadEnv() {
	env := map[string]string{cloudrun.EnvInvocation: `{"version":"sortie.invocation/v1"}`}
	_, err := cloudrun.LoadEnv(func(k string) string { return env[k] })
	fmt.Println(err)
	// Output: invalid SORTIE_SQLITE_PATH: set exactly one of SORTIE_SQLITE_PATH (a SQLite file) and SORTIE_DYNAMODB_TABLE (a DynamoDB table): the control plane
}

// Service mode refuses a caller without a Google ID token before reading
// the invocation.
func ExampleHandler() {
	h := &cloudrun.Handler{Verifier: &cloudrun.IDTokenVerifier{Audience: "https://worker.example.run.app"}}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, cloudrun.InvocationsPath, strings.NewReader("{}")))
	fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	// Output: 401 {"status":"refused","error":"caller not verified"}
}
