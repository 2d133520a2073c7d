package callback

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/sortie-run/sortie"
)

// schemaFS holds the JSON Schemas (draft 2020-12) of the request bodies.
//
//go:embed schemas/*.json
var schemaFS embed.FS

// schemaBase is the $id prefix of the embedded schemas.
const schemaBase = "https://sortie.run/schemas/callback/"

// maxReasonBytes bounds a schema error's reason, so no long part of a body
// is ever echoed.
const maxReasonBytes = 200

// maxFieldTokenBytes bounds each property name in a field path.
const maxFieldTokenBytes = 64

// schemas are the compiled body schemas by file name, compiled once.
var schemas = sync.OnceValues(compileSchemas)

var printer = message.NewPrinter(language.English)

// compileSchemas compiles every embedded schema. Nothing is loaded from
// anywhere else: the compiler's loader refuses every URL.
func compileSchemas() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	names := []string{"empty.json", "events.json", "complete.json"}
	for _, name := range names {
		b, err := schemaFS.ReadFile("schemas/" + name)
		if err != nil {
			return nil, fmt.Errorf("callback: read schema %s: %w", name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("callback: parse schema %s: %w", name, err)
		}
		if err := c.AddResource(schemaBase+name, doc); err != nil {
			return nil, fmt.Errorf("callback: add schema %s: %w", name, err)
		}
	}
	out := make(map[string]*jsonschema.Schema, len(names))
	for _, name := range names {
		s, err := c.Compile(schemaBase + name)
		if err != nil {
			return nil, fmt.Errorf("callback: compile schema %s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

// validateBody parses body as JSON and validates it against s. It returns
// a [*sortie.ValidationError] naming the field ("events[0].seq") for the
// first violation, or field "body" for JSON that does not parse.
func validateBody(s *jsonschema.Schema, body []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return sortie.Invalidf("body", "not a single valid JSON value")
	}
	err = s.Validate(doc)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil
	} else if !errors.As(err, &ve) {
		return sortie.Invalidf("body", "schema validation failed")
	}
	leaf := firstLeaf(ve)
	return sortie.Invalidf(fieldOf(leaf), "%s", clip(leaf.ErrorKind.LocalizedString(printer), maxReasonBytes))
}

// firstLeaf returns the first violation without causes.
func firstLeaf(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	return e
}

// fieldOf names the field of a violation: its instance location as a path
// ("events[0].seq"), plus the property a required or additionalProperties
// violation is about.
func fieldOf(e *jsonschema.ValidationError) string {
	loc := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		if len(k.Missing) > 0 {
			loc = append(loc[:len(loc):len(loc)], k.Missing[0])
		}
	case *kind.AdditionalProperties:
		if len(k.Properties) > 0 {
			loc = append(loc[:len(loc):len(loc)], k.Properties[0])
		}
	}
	return fieldPath(loc)
}

// fieldPath joins a JSON Pointer's tokens as a path: numbers are array
// indexes ("[0]"), other tokens are property names. The body schemas have
// no numeric property names, so this reads one way only.
func fieldPath(tokens []string) string {
	if len(tokens) == 0 {
		return "body"
	}
	var b strings.Builder
	for _, t := range tokens {
		if _, err := strconv.Atoi(t); err == nil {
			b.WriteString("[" + t + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(clip(t, maxFieldTokenBytes))
	}
	return b.String()
}

// clip returns s as valid UTF-8 of about n bytes at most.
func clip(s string, n int) string {
	if len(s) <= n {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ToValidUTF8(s[:n], "\uFFFD") + "…"
}
