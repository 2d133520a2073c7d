package a2a

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/errordetails"

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
// jsonbody.MaxDepth, starting with a UTF-8 byte-order mark or holding an
// object key twice ({"id":1,"id":2} would be answered about whichever id
// a2a-go's decoder keeps): a JSON-RPC invalid-request error naming the
// key, id null; one sent with a Content-Encoding other than identity is
// the same error with HTTP status 415, naming the header. It reports whether the
// request goes on, with its body put back for a2a-go to decode.
func checkRPCBody(w http.ResponseWriter, r *http.Request, maxBody int64) bool {
	if r.Method != http.MethodPost {
		return true // a2a-go refuses other methods
	}
	bad := readBody(w, r, maxBody)
	switch {
	case bad == nil:
		return true
	case bad.status == http.StatusUnsupportedMediaType:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(bad.status)
		writeRPCError(w, rpcInvalidRequest, bad.msg, map[string]any{"field": bad.field})
	case bad.status == 0: // the body could not be read
		writeRPCError(w, rpcParseError, bad.msg, nil)
	case bad.status == http.StatusRequestEntityTooLarge:
		writeRPCError(w, rpcInvalidRequest, bad.msg, nil)
	default:
		writeRPCError(w, rpcInvalidRequest, bad.msg, map[string]any{"field": bad.field})
	}
	return false
}

// badBody is why readBody refused a body: the HTTP status a REST answer
// gets (0: the body could not be read, a 400 there), the message and the
// header or field it names.
type badBody struct {
	status     int
	msg, field string
}

// readBody reads r's body (at most maxBody bytes) and checks it as the
// rest of the host's API does: a Content-Encoding other than identity is
// 415; a body over maxBody 413; one [jsonbody.CheckShape] refuses 400,
// naming the field. A body that passes is put back for a2a-go to decode
// and readBody returns nil.
func readBody(w http.ResponseWriter, r *http.Request, maxBody int64) *badBody {
	if err := jsonbody.CheckEncoding(w, r.Header); err != nil {
		return &badBody{http.StatusUnsupportedMediaType, err.Error(), "Content-Encoding"}
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var mbe *http.MaxBytesError
	var ve *sortie.ValidationError
	switch {
	case errors.As(err, &mbe):
		return &badBody{http.StatusRequestEntityTooLarge, fmt.Sprintf("invalid body: over the limit of %d bytes", maxBody), "body"}
	case err != nil:
		return &badBody{0, "reading the body: " + err.Error(), "body"}
	case errors.As(jsonbody.CheckShape(b), &ve):
		return &badBody{http.StatusBadRequest, ve.Error(), ve.Field}
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return nil
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

// checkRESTBody is checkRPCBody for the REST binding, whose errors are
// google.rpc.Status bodies (as a2a-go answers): 415 for a Content-Encoding
// other than identity, 413 over maxBody, 400 for a body [jsonbody.CheckShape]
// refuses ({"message":..,"message":..} would run whichever a2a-go keeps),
// each naming the header or field in a details entry. It reports whether
// the request goes on, with its body put back.
func checkRESTBody(w http.ResponseWriter, r *http.Request, maxBody int64) bool {
	bad := readBody(w, r, maxBody)
	if bad == nil {
		return true
	}
	writeRESTError(w, cmp.Or(bad.status, http.StatusBadRequest), bad.msg, bad.field)
	return false
}

// writeRESTError answers a REST request a2a-go has not read, in the
// google.rpc.Status shape a2a-go answers its own errors in: status is
// the HTTP status (the google.rpc status is INVALID_ARGUMENT, as a2a-go
// gives a body it cannot read), field (when not "") is named in a details
// entry.
func writeRESTError(w http.ResponseWriter, status int, msg, field string) {
	var details []*errordetails.Typed
	if field != "" {
		details = append(details, errordetails.NewFromStruct(map[string]any{"field": field}))
	}
	details = append(details, errordetails.NewErrorInfo(a2a.ErrorReason(a2a.ErrInvalidRequest), a2a.ProtocolDomain, nil))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "status": "INVALID_ARGUMENT", "message": msg, "details": details}})
}
