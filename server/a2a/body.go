package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/jsonbody"
)

// JSON-RPC 2.0 error codes this handler answers itself, before a2a-go
// reads the request.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
)

// checkRPCBody reads a JSON-RPC request's body (at most maxBody bytes) and
// refuses, as the rest of the host's API does, one nested deeper than
// jsonbody.MaxDepth or holding an object key twice ({"id":1,"id":2} would
// be answered about whichever id a2a-go's decoder keeps): a JSON-RPC
// invalid-request error naming the key, id null. It reports whether the
// request goes on, with its body put back for a2a-go to decode.
func checkRPCBody(w http.ResponseWriter, r *http.Request, maxBody int64) bool {
	if r.Method != http.MethodPost {
		return true // a2a-go refuses other methods
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var mbe *http.MaxBytesError
	var ve *sortie.ValidationError
	switch {
	case errors.As(err, &mbe):
		writeRPCError(w, rpcInvalidRequest, fmt.Sprintf("invalid body: over the limit of %d bytes", maxBody), nil)
		return false
	case err != nil:
		writeRPCError(w, rpcParseError, "reading the body: "+err.Error(), nil)
		return false
	case errors.As(jsonbody.CheckShape(b), &ve):
		writeRPCError(w, rpcInvalidRequest, ve.Error(), map[string]any{"field": ve.Field})
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return true
}

// writeRPCError answers a JSON-RPC error response without an id (the
// request's could not be read, or was not trusted), with data when not
// nil.
func writeRPCError(w http.ResponseWriter, code int, msg string, data any) {
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil, "error": e})
}
