package a2a

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// streamsOnREST reports whether r is a streaming call of the REST binding
// (POST .../message:stream or .../tasks/{id}:subscribe).
func streamsOnREST(r *http.Request) bool {
	return r.Method == http.MethodPost &&
		(strings.HasSuffix(r.URL.Path, "/message:stream") || strings.HasSuffix(r.URL.Path, ":subscribe"))
}

// preStream holds a REST stream's "200 text/event-stream" until its first
// frame is flushed. a2a-go v2.3.1 (a2asrv/rest.go, handleStreamingRequest)
// commits the 200 before the handler yields anything, so an error that
// comes first — SubscribeToTask of a finished or unknown task — becomes a
// data frame of a 200 stream, which clients such as the A2A JavaScript
// SDK read as an empty event. A stream of the A2A specification carries
// tasks and updates only; an error before the first of them is the REST
// binding's error response. preStream turns that first error frame
// (a2a-go's google.rpc.Status body, {"error": {"code": HTTP status, ...}})
// into that response: the status and the JSON body a2a-go writes for a
// unary call. Errors after the first event stay in the stream. The
// specification does not yet say how a stream reports a later error
// (a2aproject/A2A#1262); a2a-dotnet made the same fix
// (a2aproject/a2a-dotnet#486).
type preStream struct {
	w       http.ResponseWriter
	status  int
	held    bytes.Buffer
	decided bool
	failed  bool // the stream was answered as an error response
}

func newPreStream(w http.ResponseWriter) *preStream {
	return &preStream{w: w, status: http.StatusOK}
}

func (p *preStream) Header() http.Header { return p.w.Header() }

func (p *preStream) WriteHeader(code int) {
	if p.decided {
		p.w.WriteHeader(code)
		return
	}
	p.status = code
}

func (p *preStream) Write(b []byte) (int, error) {
	switch {
	case p.failed:
		return len(b), nil
	case p.decided:
		return p.w.Write(b)
	}
	return p.held.Write(b)
}

// Flush decides, at the first frame, between a stream and an error.
func (p *preStream) Flush() {
	p.decide()
	if !p.failed {
		_ = http.NewResponseController(p.w).Flush()
	}
}

func (p *preStream) Unwrap() http.ResponseWriter { return p.w }

// decide writes what was held: the error response when the first frame
// is an error, else the held status and frame. The handler's return
// calls it too, for a response that was never flushed.
func (p *preStream) decide() {
	if p.decided {
		return
	}
	p.decided = true
	if status, body, ok := errorFrame(p.held.Bytes()); ok && p.status == http.StatusOK {
		p.failed = true
		h := p.w.Header()
		h.Del("Cache-Control")
		h.Del("X-Accel-Buffering")
		h.Set("Content-Type", "application/json")
		p.w.WriteHeader(status)
		_, _ = p.w.Write(append(body, '\n'))
		return
	}
	p.w.WriteHeader(p.status)
	_, _ = p.w.Write(p.held.Bytes())
}

// errorFrame reads the data of an SSE frame that is a REST error, {"error":
// {"code": 400..599, ...}}, and returns its status and JSON.
func errorFrame(frame []byte) (int, []byte, bool) {
	sc := bufio.NewScanner(bytes.NewReader(frame))
	sc.Buffer(nil, len(frame)+1)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct {
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(data), &e) != nil || e.Error == nil || e.Error.Code < 400 || e.Error.Code > 599 {
			return 0, nil, false
		}
		return e.Error.Code, []byte(data), true
	}
	return 0, nil, false
}
