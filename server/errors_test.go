package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// Every error the API answers crosses the wire as the body a client maps
// back to the same sentinel (sortie.ErrClosed as ErrUnavailable), and bad
// input keeps its field.
func TestErrorBodiesMapBackToTheSentinels(t *testing.T) {
	var logs strings.Builder
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		err       error
		ctx       context.Context
		status    int
		code      string
		wantErr   error // what the client maps the answer back to; nil for none
		wantField string
	}{
		{sortie.ErrNotFound, nil, 404, "not_found", sortie.ErrNotFound, ""},
		{sortie.ErrIdempotencyConflict, nil, 409, "idempotency_conflict", sortie.ErrIdempotencyConflict, ""},
		{sortie.ErrTerminal, nil, 409, "terminal", sortie.ErrTerminal, ""},
		{sortie.ErrCancelRequested, nil, 409, "cancel_requested", sortie.ErrCancelRequested, ""},
		{sortie.ErrConflict, nil, 409, "conflict", sortie.ErrConflict, ""},
		{&sortie.AgentBudgetError{Window: sortie.SpendWindow{Agent: "probe", PeriodMs: 86_400_000}, BudgetNanoUSD: 50_000_000, SpentNanoUSD: 60_000_000},
			nil, 409, "budget_exhausted", sortie.ErrBudgetExhausted, ""},
		{sortie.ErrPayloadIntegrity, nil, 500, "payload_integrity", sortie.ErrPayloadIntegrity, ""},
		{sortie.ErrUnavailable, nil, 503, "unavailable", sortie.ErrUnavailable, ""},
		{sortie.ErrThrottled, nil, 429, "throttled", sortie.ErrThrottled, ""},
		{sortie.ErrClosed, nil, 503, "unavailable", sortie.ErrUnavailable, ""},
		{sortie.ErrInvalidArgument, nil, 400, "invalid_argument", sortie.ErrInvalidArgument, "body"},
		{sortie.Invalidf("labels.team", "too long"), nil, 400, "invalid_argument", sortie.ErrInvalidArgument, "labels.team"},
		{&bodyError{status: 413, msg: "request body over the limit of 16384 bytes"}, nil, 413, "payload_too_large", sortie.ErrInvalidArgument, "body"},
		{&bodyError{status: 415, msg: "not JSON"}, nil, 415, "unsupported_media_type", sortie.ErrInvalidArgument, "body"},
		{context.Canceled, canceled, 499, "cancelled", nil, ""},
		{errors.New("disk on fire at /var/lib/x"), nil, 500, "internal", nil, ""},
	} {
		r := httptest.NewRequest(http.MethodGet, "/v1/runs", nil)
		if c.ctx != nil {
			r = r.WithContext(c.ctx)
		}
		status, body := s.errorBody(r, fmt.Errorf("handler: %w", c.err))
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := wire.DecodeError(b)
		if status != c.status || !ok || d.Code != c.code {
			t.Errorf("errorBody(%v) = %d %s, want %d code %q", c.err, status, b, c.status, c.code)
			continue
		}
		back := wire.Err(status, d)
		var ve *sortie.ValidationError
		switch {
		case c.wantErr == nil && back != nil:
			t.Errorf("errorBody(%v) = %d %s maps back to %v, want no sentinel", c.err, status, b, back)
		case c.wantErr != nil && !errors.Is(back, c.wantErr):
			t.Errorf("errorBody(%v) = %d %s maps back to %v, want %v", c.err, status, b, back, c.wantErr)
		case c.wantField != "" && (!errors.As(back, &ve) || ve.Field != c.wantField):
			t.Errorf("errorBody(%v) = %d %s maps back to %v, want a ValidationError of %q", c.err, status, b, back, c.wantField)
		}
	}
	if strings.Contains(fmt.Sprint(s.errorBody(httptest.NewRequest(http.MethodGet, "/", nil), errors.New("disk on fire at /var/lib/x"))), "/var/lib") {
		t.Error("a 500's body shows the cause")
	}
	broken := fmt.Errorf("read the result of run R (payload runs/R/result-1, SHA-256 %s): %w", strings.Repeat("ab", 32), sortie.ErrPayloadIntegrity)
	if _, body := s.errorBody(httptest.NewRequest(http.MethodGet, "/v1/runs/R", nil), broken); body.Error.Message != broken.Error() {
		t.Errorf("a payload_integrity answer says %q, want the error naming the key and the SHA-256: %q", body.Error.Message, broken)
	}
	if !strings.Contains(logs.String(), "disk on fire") || !strings.Contains(logs.String(), "payload runs/R/result-1") {
		t.Errorf("the server log does not hold the 500s' causes (an internal error, a payload's integrity): %q", logs.String())
	}
}
