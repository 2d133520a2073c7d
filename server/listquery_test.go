package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sortie-run/sortie/wire"
)

// A page token or context ID over its limit is refused naming that one
// parameter and its limit, not the other.
func TestListNamesTheParameterOverItsLimit(t *testing.T) {
	r := newRig(t, nil)
	for _, c := range []struct{ query, field, want string }{
		{"page_token=" + strings.Repeat("A", 5000), "page_token", "5000 bytes, at most 1024"},
		{"context_id=" + strings.Repeat("c", 300), "context_id", "300 bytes, at most 256"},
	} {
		status, _, eb := do(t, r, http.MethodGet, "/v1/runs?"+c.query, "", nil)
		if status != http.StatusBadRequest || eb.Error.Code != wire.CodeInvalidArgument || eb.Error.Field != c.field || !strings.Contains(eb.Error.Message, c.want) {
			t.Errorf("GET /v1/runs?%.20s... = %d %+v, want 400 naming %s: %q", c.query, status, eb, c.field, c.want)
		}
	}
}
