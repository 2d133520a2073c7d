package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/sortie-run/sortie"
)

// maxReasonBytes bounds an error's reason, so no long part of a body is
// ever echoed; maxFieldTokenBytes bounds each property name in a field.
const (
	maxReasonBytes     = 200
	maxFieldTokenBytes = 64
)

var printer = message.NewPrinter(language.English)

// Schemas are compiled body schemas by file name without ".json".
type Schemas map[string]*jsonschema.Schema

// Compile compiles every "*.json" file of dir in fsys, each added under
// base + its file name (its $id may say the same).
func Compile(fsys fs.FS, dir, base string) (Schemas, error) {
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	names, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read schema %s: %w", name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("parse schema %s: %w", name, err)
		}
		if err := c.AddResource(base+path.Base(name), doc); err != nil {
			return nil, fmt.Errorf("add schema %s: %w", name, err)
		}
	}
	out := make(Schemas, len(names))
	for _, name := range names {
		s, err := c.Compile(base + path.Base(name))
		if err != nil {
			return nil, fmt.Errorf("compile schema %s: %w", name, err)
		}
		out[strings.TrimSuffix(path.Base(name), ".json")] = s
	}
	return out, nil
}

// Validate parses body as one JSON value and validates it against the
// schema name. It returns a [*sortie.ValidationError] naming the field of
// the first violation (field "body" for the body as a whole, and for JSON
// that does not parse).
func (s Schemas) Validate(name string, body []byte) error {
	sch, ok := s[name]
	if !ok {
		return fmt.Errorf("jsonbody: no schema %q", name)
	}
	return check(sch, body, "body", "")
}

// CompileSchema compiles one schema document (JSON) added under id; its
// $refs may only point inside it. It returns a [*sortie.ValidationError]
// for field when doc is not JSON or not a valid schema.
func CompileSchema(field, id string, doc []byte) (*jsonschema.Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, sortie.Invalidf(field, "%s", syntaxReason(doc))
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource(id, v); err != nil {
		return nil, sortie.Invalidf(field, "%s", clip(err.Error(), maxReasonBytes))
	}
	sch, err := c.Compile(id)
	if err != nil {
		return nil, sortie.Invalidf(field, "not a valid JSON Schema: %s", clip(err.Error(), maxReasonBytes))
	}
	return sch, nil
}

// Check validates the JSON value v against sch. It returns a
// [*sortie.ValidationError] whose field is root for the value as a whole
// (and for JSON that does not parse) and root plus the path of the first
// violation otherwise ("result.items[0].id"). The reason names the rule,
// never the value.
func Check(sch *jsonschema.Schema, v []byte, root string) error {
	return check(sch, v, root, root)
}

// check validates body against sch; whole names the body as a whole,
// prefix starts every other field.
func check(sch *jsonschema.Schema, body []byte, whole, prefix string) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return sortie.Invalidf(whole, "%s", syntaxReason(body))
	}
	var ve *jsonschema.ValidationError
	if err := sch.Validate(doc); err == nil {
		return nil
	} else if !errors.As(err, &ve) {
		return sortie.Invalidf(whole, "schema validation failed")
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	field := fieldOf(ve)
	switch {
	case field == "":
		field = whole
	case prefix != "" && field[0] == '[':
		field = prefix + field
	case prefix != "":
		field = prefix + "." + field
	}
	return sortie.Invalidf(field, "%s", clip(ve.ErrorKind.LocalizedString(printer), maxReasonBytes))
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
// indexes ("[0]"), other tokens property names; "" for none.
func fieldPath(tokens []string) string {
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

// utf8BOM is the UTF-8 byte-order mark, and bomReason why a body
// starting with one is refused.
const (
	utf8BOM   = "\xef\xbb\xbf"
	bomReason = "starts with a UTF-8 byte-order mark (EF BB BF); JSON text must not begin with one (RFC 8259 §8.1)"
)

// syntaxReason says why b is not one JSON value: it starts with a
// byte-order mark, which RFC 8259 §8.1 says a JSON text must not add, or
// the decoder's error and how many bytes it read up to it (the bad byte
// is the last of them).
func syntaxReason(b []byte) string {
	if bytes.HasPrefix(b, []byte(utf8BOM)) {
		return bomReason
	}
	var raw json.RawMessage // checks the syntax without building the value
	var se *json.SyntaxError
	if err := json.Unmarshal(b, &raw); errors.As(err, &se) {
		return fmt.Sprintf("not a single valid JSON value (error after %d bytes: %s)", se.Offset, clip(se.Error(), 100))
	}
	return "not a single valid JSON value"
}

// clip returns s as valid UTF-8 of about n bytes at most.
func clip(s string, n int) string {
	if len(s) <= n {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ToValidUTF8(s[:n], "\uFFFD") + "…"
}

// IsJSON reports whether a Content-Type header value ct declares JSON:
// application/json, with any parameters (charset=utf-8).
func IsJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}
