package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// printVariables writes what an input schema declares, for describe: its
// description, then a line a property in the schema's order — name,
// type, required, limits and default, description — and whether other
// variables are refused. A schema without properties is printed as
// indented JSON.
func printVariables(out io.Writer, schema json.RawMessage) error {
	if len(schema) == 0 {
		_, err := fmt.Fprintln(out, "variables    not declared (no input_schema: the agent's handler checks them)")
		return err
	}
	var s struct {
		Description          string          `json:"description"`
		Properties           json.RawMessage `json:"properties"`
		Required             []string        `json:"required"`
		AdditionalProperties *bool           `json:"additionalProperties"`
	}
	names, err := objectKeys(schema, "properties")
	if err != nil || json.Unmarshal(schema, &s) != nil || len(names) == 0 {
		var b bytes.Buffer
		if err := json.Indent(&b, schema, "", "  "); err != nil {
			return err
		}
		_, err := fmt.Fprintf(out, "input_schema\n%s\n", b.Bytes())
		return err
	}
	fmt.Fprintln(out, "variables    "+oneLine(s.Description))
	var props map[string]map[string]any
	if err := json.Unmarshal(s.Properties, &props); err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, name := range names {
		p := props[name]
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", name, typeOf(p), limitsOf(p, slices.Contains(s.Required, name)), oneLine(str(p["description"])))
	}
	if s.AdditionalProperties != nil && !*s.AdditionalProperties {
		fmt.Fprintln(w, "  (other variables are refused)")
	}
	return w.Flush()
}

// objectKeys returns the keys of the object under key in the JSON
// object doc, in their order in the document; none when it has none.
func objectKeys(doc json.RawMessage, key string) ([]string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, err
	}
	inner, ok := top[key]
	if !ok {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(inner))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("%s is not an object", key)
	}
	var keys []string
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// typeOf is a property's type ("integer", "string|null"), "any" when
// the schema does not say.
func typeOf(p map[string]any) string {
	switch t := p["type"].(type) {
	case string:
		return t
	case []any:
		parts := make([]string, 0, len(t))
		for _, x := range t {
			parts = append(parts, str(x))
		}
		return strings.Join(parts, "|")
	}
	return "any"
}

// limitsOf says whether a property is required, its allowed values or
// range, and its default.
func limitsOf(p map[string]any, required bool) string {
	var parts []string
	if required {
		parts = append(parts, "required")
	}
	if enum, ok := p["enum"].([]any); ok {
		parts = append(parts, "one of "+joinJSON(enum))
	}
	lo, hasLo := p["minimum"]
	hi, hasHi := p["maximum"]
	switch {
	case hasLo && hasHi:
		parts = append(parts, jsonText(lo)+".."+jsonText(hi))
	case hasLo:
		parts = append(parts, "≥ "+jsonText(lo))
	case hasHi:
		parts = append(parts, "≤ "+jsonText(hi))
	}
	if n, ok := p["maxLength"]; ok {
		parts = append(parts, "at most "+jsonText(n)+" characters")
	}
	if n, ok := p["maxItems"]; ok {
		parts = append(parts, "at most "+jsonText(n)+" items")
	}
	if d, ok := p["default"]; ok {
		parts = append(parts, "default "+jsonText(d))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

func joinJSON(vs []any) string {
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		parts = append(parts, jsonText(v))
	}
	return strings.Join(parts, ", ")
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// oneLine is s with its line breaks and tabs as spaces, so it keeps to
// its column.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
