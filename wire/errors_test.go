package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// sentinels are the sortie sentinels by name, each with the code and
// status it crosses the wire as (the values the API documents) and the
// sentinel it comes back as.
var sentinels = map[string]struct {
	err    error
	code   string
	status int
	back   error
}{
	"ErrNotFound":            {sortie.ErrNotFound, "not_found", 404, sortie.ErrNotFound},
	"ErrIdempotencyConflict": {sortie.ErrIdempotencyConflict, "idempotency_conflict", 409, sortie.ErrIdempotencyConflict},
	"ErrConflict":            {sortie.ErrConflict, "conflict", 409, sortie.ErrConflict},
	"ErrTerminal":            {sortie.ErrTerminal, "terminal", 409, sortie.ErrTerminal},
	"ErrCancelRequested":     {sortie.ErrCancelRequested, "cancel_requested", 409, sortie.ErrCancelRequested},
	"ErrInvalidArgument":     {sortie.ErrInvalidArgument, "invalid_argument", 400, sortie.ErrInvalidArgument},
	"ErrUnavailable":         {sortie.ErrUnavailable, "unavailable", 503, sortie.ErrUnavailable},
	"ErrThrottled":           {sortie.ErrThrottled, "throttled", 429, sortie.ErrThrottled},
	"ErrBudgetExhausted":     {sortie.ErrBudgetExhausted, "budget_exhausted", 409, sortie.ErrBudgetExhausted},
	"ErrRefused":             {sortie.ErrRefused, "refused", 403, sortie.ErrRefused},
	"ErrPayloadIntegrity":    {sortie.ErrPayloadIntegrity, "payload_integrity", 500, sortie.ErrPayloadIntegrity},
	// A closing server tells the client to retry elsewhere.
	"ErrClosed": {sortie.ErrClosed, "unavailable", 503, sortie.ErrUnavailable},
}

// Every sentinel package sortie declares has a case above: a new
// sentinel without a code fails here rather than turning into "internal"
// on the wire.
func TestEverySentinelHasACase(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found int
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				if !strings.HasPrefix(n.Name, "Err") {
					continue
				}
				found++
				if _, ok := sentinels[n.Name]; !ok {
					t.Errorf("sortie.%s has no case in this test (and maybe no row in the wire table)", n.Name)
				}
			}
		}
	}
	if found != len(sentinels) {
		t.Errorf("errors.go declares %d sentinels, the test has %d cases", found, len(sentinels))
	}
}

// Each sentinel, wrapped, maps to its code and status; the error body
// survives JSON; and the client side maps it back to the sentinel, so
// errors.Is holds across the wire.
func TestSentinelsRoundTrip(t *testing.T) {
	for name, c := range sentinels {
		m, ok := wire.ForError(fmt.Errorf("op on run x: %w", c.err))
		if !ok || m.Code != c.code || m.Status != c.status || m.Message == "" {
			t.Errorf("ForError(wrapped %s) = %+v, %v; want code %q, status %d and a message", name, m, ok, c.code, c.status)
			continue
		}
		b, err := json.Marshal(wire.ErrorBody{Error: wire.ErrorDetail{Code: m.Code, Message: m.Message}})
		if err != nil {
			t.Fatal(err)
		}
		d, ok := wire.DecodeError(b)
		if !ok || d.Code != c.code {
			t.Errorf("DecodeError(%s) = %+v, %v; want code %q", b, d, ok, c.code)
		}
		if got := wire.Sentinel(m.Status, d.Code); got != c.back {
			t.Errorf("Sentinel(%d, %q) = %v, want %v", m.Status, d.Code, got, c.back)
		}
		if got := wire.Err(m.Status, d); !errors.Is(got, c.back) {
			t.Errorf("Err(%d, %+v) = %v, want it to match %v", m.Status, d, got, c.back)
		}
	}
}

// Bad input keeps its field across the wire; a body that names none is
// about the body.
func TestValidationErrorKeepsTheField(t *testing.T) {
	m, ok := wire.ForError(sortie.Invalidf("labels.team", "too long"))
	if !ok || m.Code != "invalid_argument" || m.Status != 400 {
		t.Fatalf("ForError(ValidationError) = %+v, %v; want invalid_argument 400", m, ok)
	}
	for _, c := range []struct {
		status           int
		code, field, msg string
		wantField        string
	}{
		{400, "invalid_argument", "labels.team", "too long", "labels.team"},
		{413, "payload_too_large", "body", "over 16384 bytes", "body"},
		{400, "invalid_argument", "", "bad", "body"},
		{422, "", "", "", "body"},
	} {
		err := wire.Err(c.status, wire.ErrorDetail{Code: c.code, Message: c.msg, Field: c.field})
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.wantField || ve.Reason != c.msg || !errors.Is(err, sortie.ErrInvalidArgument) {
			t.Errorf("Err(%d, %q, field %q) = %#v, want a ValidationError of %q saying %q", c.status, c.code, c.field, err, c.wantField, c.msg)
		}
	}
}

// A code the table does not know (a newer server's, a proxy's error
// page, no body) falls back on the status; a known code without a
// sentinel stays without one whatever the status.
func TestUnknownCodesFallBackOnTheStatus(t *testing.T) {
	for _, c := range []struct {
		status int
		code   string
		want   error
	}{
		{404, "", sortie.ErrNotFound},
		{404, "Not Found", sortie.ErrNotFound},
		{409, "gone_fishing", sortie.ErrConflict},
		{400, "", sortie.ErrInvalidArgument},
		{413, "too_large", sortie.ErrInvalidArgument},
		{429, "", sortie.ErrThrottled}, // which errors.Is also takes for ErrUnavailable
		{502, "", sortie.ErrUnavailable},
		{503, "Service Unavailable", sortie.ErrUnavailable},
		{504, "", sortie.ErrUnavailable},
		{500, "", nil},
		{418, "teapot", nil},
		{401, "", nil},
		{0, "", nil},
		{500, "internal", nil},
		{503, "internal", nil},
		{401, "unauthenticated", nil},
		{404, "method_not_allowed", nil},
		{409, "cancelled", nil},
		{409, "not_found", sortie.ErrNotFound}, // the code decides over the status
	} {
		if got := wire.Sentinel(c.status, c.code); got != c.want {
			t.Errorf("Sentinel(%d, %q) = %v, want %v", c.status, c.code, got, c.want)
		}
	}
}

// DecodeError takes only an error body with a code, and ignores fields
// it does not know.
func TestDecodeError(t *testing.T) {
	for _, c := range []struct {
		body string
		want wire.ErrorDetail
		ok   bool
	}{
		{`{"error":{"code":"not_found","message":"run x not found"}}`, wire.ErrorDetail{Code: "not_found", Message: "run x not found"}, true},
		{`{"error":{"code":"invalid_argument","message":"m","field":"f","retry_after_ms":5},"trace":"t"}`, wire.ErrorDetail{Code: "invalid_argument", Message: "m", Field: "f"}, true},
		{`{"error":{"message":"no code"}}`, wire.ErrorDetail{}, false},
		{`<html>502 Bad Gateway</html>`, wire.ErrorDetail{}, false},
		{``, wire.ErrorDetail{}, false},
		{`{"error":{"code":"conflict"}}}`, wire.ErrorDetail{}, false},
	} {
		if got, ok := wire.DecodeError([]byte(c.body)); got != c.want || ok != c.ok {
			t.Errorf("DecodeError(%s) = %+v, %v; want %+v, %v", c.body, got, ok, c.want, c.ok)
		}
	}
}
