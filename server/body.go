package server

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/jsonbody"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// Request body limits, bytes. A submission holds at most the engine's
// variables limit (sortie.MaxVariablesBytes, or its payload store's
// per-payload maximum; see maxSubmitBytes) and sortie.MaxConfigBytes of
// configuration, plus the small fields.
const (
	submitOverheadBytes = sortie.MaxConfigBytes + 16<<10
	resumeOverheadBytes = 1 << 10
	maxSmallBytes       = 16 << 10
)

//go:embed schemas/*.json
var schemaFiles embed.FS

// schemas are the compiled request schemas, by file name without ".json".
type schemas = jsonbody.Schemas

func compileSchemas() (schemas, error) {
	s, err := jsonbody.Compile(schemaFiles, "schemas", "https://sortie.run/schemas/api/")
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return s, nil
}

// bodyError is a request body that could not be read (too large, or the
// connection failed) or is not declared JSON; schema violations are [*sortie.ValidationError]s.
type bodyError struct {
	status int
	msg    string
	field  string // what the error names; "" is "body"
}

func (e *bodyError) Error() string { return "body: " + e.msg }

// decode reads r's body (at most limit.bytes; a 413 names limit.what), validates it against the
// named schema and decodes it strictly into v (a field the schema allows
// but v lacks is refused, not dropped). An empty body is the empty object.
func decode(s schemas, w http.ResponseWriter, r *http.Request, name string, limit bodyLimit, v any) error {
	if err := checkEncoding(w, r); err != nil {
		return err
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit.bytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &bodyError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body over the limit of %d bytes: %s", limit.bytes, limit.what)}
	} else if err != nil {
		return &bodyError{status: http.StatusBadRequest, msg: "reading request body: " + err.Error()}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	} else if err := checkJSONBody(r, b); err != nil {
		return err
	}
	if err := s.Validate(name, b); err != nil {
		return err
	}
	if err := strictjson.Unmarshal(b, v); err != nil {
		return sortie.Invalidf("body", "%v", err)
	}
	return nil
}

// checkJSONBody refuses a body declared other than JSON (415; one without
// a Content-Type is taken as JSON, as clients that set none rely on), or
// one [jsonbody.CheckShape] refuses (too deep, a key twice), naming the
// field and the key.
func checkJSONBody(r *http.Request, b []byte) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !jsonbody.IsJSON(ct) {
		return &bodyError{status: http.StatusUnsupportedMediaType,
			msg: fmt.Sprintf("Content-Type %.60q is not JSON; send the body as application/json", r.Header.Get("Content-Type"))}
	}
	return jsonbody.CheckShape(b)
}

// checkEncoding refuses a body sent with a Content-Encoding other than
// identity ([jsonbody.CheckEncoding]): 415 naming the header.
func checkEncoding(w http.ResponseWriter, r *http.Request) error {
	if err := jsonbody.CheckEncoding(w, r.Header); err != nil {
		return &bodyError{status: http.StatusUnsupportedMediaType, field: "Content-Encoding", msg: err.Error()}
	}
	return nil
}

// bodyLimit is the most bytes a request body may hold, and what sets it,
// for a 413 to name.
type bodyLimit struct {
	bytes int64
	what  string
}

// smallLimit is the limit of the bodies that carry no variables.
var smallLimit = bodyLimit{maxSmallBytes, "the API's limit of bodies without variables"}

// maxResumeBytes is the largest resume body the server reads: a resume
// input may be as large as the engine's variables.
func (s *Server) maxResumeBytes() bodyLimit { return s.variablesLimit(resumeOverheadBytes) }

// maxSubmitBytes is the largest submission body the server reads.
func (s *Server) maxSubmitBytes() bodyLimit { return s.variablesLimit(submitOverheadBytes) }

// variablesLimit is the largest variables the engine takes plus overhead
// bytes of request, naming the engine's setting of the former.
func (s *Server) variablesLimit(overhead int64) bodyLimit {
	n := int64(s.eng.MaxVariablesBytes())
	return bodyLimit{n + overhead, fmt.Sprintf("the largest variables, %d bytes (%s), plus %d bytes of request",
		n, s.eng.MaxVariablesSetting(), overhead)}
}
