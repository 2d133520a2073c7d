package secretstores

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// AWS is a running Secrets Manager on loopback.
type AWS struct {
	// URL is the server's base URL, the client's endpoint.
	URL string

	mu      sync.Mutex
	secrets map[string]string // name or ARN → SecretString
	asked   []string
}

// StartAWS serves secrets (by name or ARN → SecretString) until tb ends.
func StartAWS(tb testing.TB, secrets map[string]string) *AWS {
	tb.Helper()
	s := &AWS{secrets: secrets}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Asked returns the SecretIds of the GetSecretValue calls answered, in
// order.
func (s *AWS) Asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked...)
}

func (s *AWS) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue":
		awsError(w, http.StatusBadRequest, "UnknownOperationException", "only GetSecretValue is served")
		return
	case !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="):
		awsError(w, http.StatusBadRequest, "MissingAuthenticationTokenException", "the request is not signed")
		return
	}
	var in struct {
		SecretID     string `json:"SecretId"`
		VersionStage string `json:"VersionStage"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.SecretID == "" {
		awsError(w, http.StatusBadRequest, "InvalidParameterException", "SecretId is required")
		return
	}
	s.mu.Lock()
	s.asked = append(s.asked, in.SecretID)
	v, ok := s.secrets[in.SecretID]
	s.mu.Unlock()
	if !ok {
		awsError(w, http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(map[string]any{"ARN": in.SecretID, "Name": in.SecretID, "SecretString": v,
		"VersionId": "v1", "VersionStages": []string{"AWSCURRENT"}, "CreatedDate": 1.7e9})
}

// awsError answers a JSON 1.1 error.
func awsError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}
