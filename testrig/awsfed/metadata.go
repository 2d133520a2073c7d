package awsfed

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// IdentityPath is the metadata server's path of the default service
// account's ID tokens.
const IdentityPath = "/computeMetadata/v1/instance/service-accounts/default/identity"

// Metadata is a running metadata server.
type Metadata struct {
	// Host is its host:port (GCE_METADATA_HOST).
	Host string

	mu       sync.Mutex
	issued   map[string]string // token → audience
	requests int
}

// StartMetadata serves the identity endpoint on loopback until tb ends.
func StartMetadata(tb testing.TB) *Metadata {
	m := &Metadata{issued: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	tb.Cleanup(srv.Close)
	m.Host = strings.TrimPrefix(srv.URL, "http://")
	return m
}

func (m *Metadata) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path != IdentityPath:
		http.NotFound(w, r)
		return
	case r.Header.Get("Metadata-Flavor") != "Google":
		http.Error(w, "Missing Metadata-Flavor:Google header.", http.StatusForbidden)
		return
	}
	aud := r.URL.Query().Get("audience")
	if aud == "" {
		http.Error(w, "non-empty audience parameter required", http.StatusBadRequest)
		return
	}
	b := make([]byte, 16)
	rand.Read(b)
	tok := "google-id-token." + hex.EncodeToString(b)
	m.mu.Lock()
	m.issued[tok] = aud
	m.requests++
	m.mu.Unlock()
	w.Header().Set("Metadata-Flavor", "Google")
	w.Header().Set("Content-Type", "application/text")
	fmt.Fprint(w, tok)
}

// Requests returns how many ID tokens the server issued.
func (m *Metadata) Requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests
}

// Check returns nil when token is one the server issued for audience.
func (m *Metadata) Check(token, audience string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	aud, ok := m.issued[token]
	switch {
	case !ok:
		return errors.New("not a token of this metadata server")
	case aud != audience:
		return fmt.Errorf("token audience %q, want %q", aud, audience)
	}
	return nil
}
