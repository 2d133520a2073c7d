package cehttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	sdkhttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/internal/jsonbody"
	"github.com/sortie-run/sortie/wire"
)

// DefaultMaxBodyBytes is the default limit of a request body: 10 MiB, a
// Pub/Sub message's limit.
const DefaultMaxBodyBytes = 10 << 20

// Options configures [NewHandler]. A nil *Options means the defaults.
type Options struct {
	// MaxBodyBytes bounds a request body, in bytes. Optional; defaults to
	// [DefaultMaxBodyBytes].
	MaxBodyBytes int64
	// Logger receives refused requests. Optional; defaults to slog.Default().
	Logger *slog.Logger
}

// Response is the JSON body the handler answers with: the outcome of the
// event for each rule (started, existed, unmatched, rejected, failed), or
// why the request is not a CloudEvent.
type Response struct {
	Outcomes []triggers.Outcome `json:"outcomes,omitempty"`
	// Error is set on a refusal or a failure, in the shape of every
	// error of the HTTP API ({"code","message","field"}; package wire).
	Error *wire.ErrorDetail `json:"error,omitempty"`
}

// NewHandler returns an http.Handler that routes each CloudEvent POSTed to
// it, in binary mode (ce-* headers) or structured mode
// (application/cloudevents+json), through router. It answers:
//
//   - 200 with the outcomes when nothing failed: runs started or existed,
//     no rule matched, or the event was rejected (undecodable data, a
//     template reading a field the event lacks). Pub/Sub push, which
//     carries Eventarc's events, takes 102, 200, 201, 202 and 204 as an
//     acknowledgement and redelivers on any other code (Pub/Sub docs,
//     "Push subscriptions"), and a redelivery cannot cure a rejection;
//   - 500 with the outcomes when a run could not be started: the event is
//     redelivered, and runs it already started are not started again;
//   - 400 for a request that is not a valid CloudEvent, a structured
//     envelope holding an object key twice (named) and a ce-* or
//     Content-Type header given twice (named); 415 for a batch
//     (application/cloudevents-batch+json: one event per request) and a
//     Content-Encoding other than identity; 413 over MaxBodyBytes; 405
//     for methods other than POST. Nothing is started for any of them.
func NewHandler(router *triggers.Router, opts *Options) http.Handler {
	h := &handler{router: router, max: DefaultMaxBodyBytes, log: slog.Default()}
	if opts != nil && opts.MaxBodyBytes > 0 {
		h.max = opts.MaxBodyBytes
	}
	if opts != nil && opts.Logger != nil {
		h.log = opts.Logger
	}
	return h
}

type handler struct {
	router *triggers.Router
	max    int64
	log    *slog.Logger
}

func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, Response{Error: &wire.ErrorDetail{Code: wire.CodeMethodNotAllowed, Message: "POST a CloudEvent"}})
		return
	}
	if err := jsonbody.CheckEncoding(w, req.Header); err != nil {
		h.log.Warn("trigger: CloudEvent request refused", "status", http.StatusUnsupportedMediaType, "err", err)
		reply(w, http.StatusUnsupportedMediaType, Response{Error: &wire.ErrorDetail{Code: wire.CodeUnsupportedMediaType, Message: err.Error(), Field: "Content-Encoding"}})
		return
	}
	if name, n := repeatedHeader(req.Header); n > 1 {
		h.refuse(w, http.StatusBadRequest, fmt.Errorf("header %s given %d times; send it once", name, n), name)
		return
	}
	req.Body = http.MaxBytesReader(w, req.Body, h.max)
	msg := sdkhttp.NewMessageFromHttpRequest(req)
	switch msg.ReadEncoding() {
	case binding.EncodingBatch:
		h.refuse(w, http.StatusUnsupportedMediaType, errors.New("batched CloudEvents (application/cloudevents-batch+json) are not accepted: POST one event per request, in binary or structured mode"), "")
		return
	case binding.EncodingStructured:
		if !h.checkEnvelope(w, req) {
			return
		}
		msg = sdkhttp.NewMessageFromHttpRequest(req)
	}
	e, err := binding.ToEvent(req.Context(), msg)
	if err != nil {
		h.refuseUnread(w, err)
		return
	}
	if err := e.Validate(); err != nil {
		h.refuse(w, http.StatusBadRequest, fmt.Errorf("invalid CloudEvent: %w", err), "cloudevent")
		return
	}
	out, err := h.router.RouteCloudEvent(req.Context(), FromEvent(e))
	if err != nil {
		reply(w, http.StatusInternalServerError, Response{Outcomes: out, Error: &wire.ErrorDetail{Code: wire.CodeInternal, Message: err.Error()}})
		return
	}
	reply(w, http.StatusOK, Response{Outcomes: out})
}

// checkEnvelope reads a structured-mode request's body and refuses it,
// before the SDK decodes it (keeping the last of a key given twice), when
// it holds an object key twice or nests too deeply ([jsonbody.CheckShape]):
// {"id":"a","id":"b"} would start a run under "b" where a relay
// deduplicating on "a" saw one event. It reports whether the request goes
// on, with its body put back.
func (h *handler) checkEnvelope(w http.ResponseWriter, req *http.Request) bool {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		h.refuseUnread(w, err)
		return false
	}
	var ve *sortie.ValidationError
	if errors.As(jsonbody.CheckShape(b), &ve) {
		h.refuse(w, http.StatusBadRequest, fmt.Errorf("not a valid CloudEvent: %s", ve.Reason), ve.Field)
		return false
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	return true
}

// refuseUnread answers a body that could not be read or decoded: 413 over
// the limit, else 400.
func (h *handler) refuseUnread(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		reply(w, http.StatusRequestEntityTooLarge, Response{Error: &wire.ErrorDetail{Code: wire.CodePayloadTooLarge, Message: fmt.Sprintf("body over %d bytes (the limit)", h.max), Field: "body"}})
		return
	}
	h.refuse(w, http.StatusBadRequest, fmt.Errorf("not a CloudEvent in binary or structured mode: %w", err), "cloudevent")
}

// repeatedHeader returns a CloudEvents header (ce-*, or Content-Type,
// which decides the mode) given more than once and how many times, or
// ("", 0). The SDK reads the first of them, where a relay may read
// another: a second ce-id would make one delivery two events.
func repeatedHeader(h http.Header) (string, int) {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if v := h[k]; len(v) > 1 && (strings.HasPrefix(strings.ToLower(k), "ce-") || strings.EqualFold(k, "Content-Type")) {
			return strings.ToLower(k), len(v)
		}
	}
	return "", 0
}

// refuse answers a request it will not route: 415 for a batch, 400 for
// anything else (field names the part at fault, "" for none).
func (h *handler) refuse(w http.ResponseWriter, code int, err error, field string) {
	h.log.Warn("trigger: CloudEvent request refused", "status", code, "err", err)
	reply(w, code, Response{Error: &wire.ErrorDetail{Code: wire.CodeInvalidArgument, Message: err.Error(), Field: field}})
}

func reply(w http.ResponseWriter, code int, body Response) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// FromEvent converts the SDK's event to what [triggers.Router] routes;
// Data is the event's bytes as delivered (data_base64 decoded).
func FromEvent(e *event.Event) triggers.CloudEvent {
	ce := triggers.CloudEvent{ID: e.ID(), Source: e.Source(), Type: e.Type(), Subject: e.Subject(),
		SpecVersion: e.SpecVersion(), DataContentType: e.DataContentType(), Data: e.Data(),
		Extensions: e.Extensions()}
	if t := e.Time(); !t.IsZero() {
		ce.Time = t.UTC().Format(time.RFC3339Nano)
	}
	return ce
}

// ParseJSON reads a CloudEvent in the JSON event format (structured mode),
// as in a file replayed by "sortie trigger". It returns a
// [*sortie.ValidationError] for anything that is not a valid CloudEvent.
func ParseJSON(b []byte) (triggers.CloudEvent, error) {
	var e event.Event
	if err := json.Unmarshal(b, &e); err != nil {
		return triggers.CloudEvent{}, sortie.Invalidf("cloudevent", "%v", err)
	}
	if err := jsonbody.CheckShape(b); err != nil { // as an envelope over HTTP is checked
		return triggers.CloudEvent{}, sortie.Invalidf("cloudevent", "%v", err)
	}
	if err := e.Validate(); err != nil {
		return triggers.CloudEvent{}, sortie.Invalidf("cloudevent", "%v", err)
	}
	return FromEvent(&e), nil
}
