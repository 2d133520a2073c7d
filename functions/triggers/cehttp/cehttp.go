package cehttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	sdkhttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
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

// Response is the JSON body the handler answers with.
type Response struct {
	Outcomes []triggers.Outcome `json:"outcomes,omitempty"`
	Error    string             `json:"error,omitempty"`
}

// NewHandler returns an http.Handler that routes each CloudEvent POSTed to
// it, in binary mode (ce-* headers) or structured mode
// (application/cloudevents+json), through router. It answers 200 with the
// outcomes when runs started or no rule matched (an unmatched event is
// not redelivered); 400 for a request that is not a valid CloudEvent or an
// event a rule's templates cannot read (redelivery cannot help; Eventarc
// and Pub/Sub send it to their dead-letter topic when one is set); 413
// over MaxBodyBytes; 405 for methods other than POST; 500 when a run could
// not be started (the event is redelivered, and runs it already started
// are not started again).
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
		reply(w, http.StatusMethodNotAllowed, Response{Error: "POST a CloudEvent"})
		return
	}
	req.Body = http.MaxBytesReader(w, req.Body, h.max)
	e, err := binding.ToEvent(req.Context(), sdkhttp.NewMessageFromHttpRequest(req))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			reply(w, http.StatusRequestEntityTooLarge, Response{Error: fmt.Sprintf("body over %d bytes (the limit)", h.max)})
			return
		}
		h.refuse(w, fmt.Errorf("not a CloudEvent in binary or structured mode: %w", err))
		return
	}
	if err := e.Validate(); err != nil {
		h.refuse(w, fmt.Errorf("invalid CloudEvent: %w", err))
		return
	}
	out, err := h.router.RouteCloudEvent(req.Context(), FromEvent(e))
	switch {
	case errors.Is(err, sortie.ErrInvalidArgument):
		h.refuse(w, err)
	case err != nil:
		reply(w, http.StatusInternalServerError, Response{Outcomes: out, Error: err.Error()})
	default:
		reply(w, http.StatusOK, Response{Outcomes: out})
	}
}

func (h *handler) refuse(w http.ResponseWriter, err error) {
	h.log.Warn("trigger: CloudEvent refused", "err", err)
	reply(w, http.StatusBadRequest, Response{Error: err.Error()})
}

func reply(w http.ResponseWriter, code int, body Response) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// FromEvent converts the SDK's event to what [triggers.Router] routes.
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
	if err := e.Validate(); err != nil {
		return triggers.CloudEvent{}, sortie.Invalidf("cloudevent", "%v", err)
	}
	return FromEvent(&e), nil
}
