package cloudrun_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sortie-run/sortie/functions/cloudrun"
)

// A job container without a control plane of its own (it reports over the
// host's signed callbacks), opening inline configuration with a Cloud KMS
// keyring; a second control plane is refused, naming the variable.
func ExampleLoadEnv() {
	env := map[string]string{
		cloudrun.EnvInvocation: `{"version":"sortie.invocation/v1"}`,
		cloudrun.EnvKMSKeys:    "gcp-1=projects/my-project/locations/europe-west1/keyRings/sortie/cryptoKeys/config",
		cloudrun.EnvConfigEnv:  "API_TOKEN",
	}
	e, err := cloudrun.LoadEnv(func(k string) string { return env[k] })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Mode, e.HasControlPlane(), e.KMSKeys[0][0], e.ConfigEnv)
	env[cloudrun.EnvSQLitePath], env[cloudrun.EnvDynamoTable] = "/data/sortie.db", "sortie-runs"
	_, err = cloudrun.LoadEnv(func(k string) string { return env[k] })
	fmt.Println(err)
	// Output:
	// job false gcp-1 [API_TOKEN]
	// invalid SORTIE_SQLITE_PATH: set at most one of SORTIE_SQLITE_PATH (a SQLite file) and SORTIE_DYNAMODB_TABLE (a DynamoDB table): the control plane
}

// Service mode refuses a caller without a Google ID token before reading
// the invocation.
func ExampleHandler() {
	h := &cloudrun.Handler{Verifier: &cloudrun.IDTokenVerifier{Audiences: []string{"https://worker.example.run.app"},
		Callers: []string{"sortie-launcher@my-project.iam.gserviceaccount.com"}}}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, cloudrun.InvocationsPath, strings.NewReader("{}")))
	fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	// Output: 401 {"status":"refused","error":"caller not verified"}
}
