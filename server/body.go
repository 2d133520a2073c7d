package server

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/sortie-run/sortie"
)

// Request body limits, bytes. A submission holds at most
// sortie.MaxVariablesBytes of variables and sortie.MaxConfigBytes of
// configuration, plus the small fields.
const (
	maxSubmitBytes = sortie.MaxVariablesBytes + sortie.MaxConfigBytes + 16<<10
	maxResumeBytes = sortie.MaxVariablesBytes + 1<<10
	maxSmallBytes  = 16 << 10
)

//go:embed schemas/*.json
var schemaFiles embed.FS

// schemas holds the compiled request schemas, keyed by file name without
// ".json".
type schemas map[string]*jsonschema.Schema

func compileSchemas() (schemas, error) {
	c := jsonschema.NewCompiler()
	entries, err := schemaFiles.ReadDir("schemas")
	if err != nil {
		return nil, err
	}
	out := schemas{}
	for _, e := range entries {
		b, err := schemaFiles.ReadFile("schemas/" + e.Name())
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("server: schema %s: %w", e.Name(), err)
		}
		url := "sortie:/schemas/" + e.Name()
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("server: schema %s: %w", e.Name(), err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("server: schema %s: %w", e.Name(), err)
		}
		out[strings.TrimSuffix(e.Name(), ".json")] = sch
	}
	return out, nil
}

// bodyError is a request body refused before anything ran.
type bodyError struct {
	status int
	field  string
	msg    string
}

func (e *bodyError) Error() string {
	if e.field == "" {
		return e.msg
	}
	return e.field + ": " + e.msg
}

// decode reads r's body (at most limit bytes), validates it against the
// named schema and decodes it into v. An empty body is the empty object.
func (s schemas) decode(w http.ResponseWriter, r *http.Request, name string, limit int64, v any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &bodyError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body over the limit of %d bytes", limit)}
	} else if err != nil {
		return &bodyError{status: http.StatusBadRequest, msg: "reading request body: " + err.Error()}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return &bodyError{status: http.StatusBadRequest, msg: "request body is not valid JSON: " + err.Error()}
	}
	if err := s[name].Validate(inst); err != nil {
		return schemaError(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &bodyError{status: http.StatusBadRequest, msg: "request body: " + err.Error()}
	}
	return nil
}

var printer = message.NewPrinter(language.English)

// schemaError turns the first leaf of a schema validation error into a
// [bodyError] naming the field ("labels.team", "events[0].seq").
func schemaError(err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &bodyError{status: http.StatusBadRequest, msg: err.Error()}
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := ve.InstanceLocation
	switch k := ve.ErrorKind.(type) {
	case *kind.AdditionalProperties: // name the unknown field itself
		loc = append(slices.Clone(loc), k.Properties[0])
	case *kind.Required:
		loc = append(slices.Clone(loc), k.Missing[0])
	}
	return &bodyError{status: http.StatusBadRequest, field: fieldPath(loc), msg: ve.ErrorKind.LocalizedString(printer)}
}

// fieldPath formats a JSON instance location: a.b[0].c; "" for the root.
func fieldPath(loc []string) string {
	var sb strings.Builder
	for _, p := range loc {
		if _, err := strconv.Atoi(p); err == nil {
			sb.WriteString("[" + p + "]")
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(p)
	}
	return sb.String()
}
