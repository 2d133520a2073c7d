package inputschema_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/inputschema"
)

// Every built-in agent declares a schema that compiles, with a
// description of its variables and of each one.
func TestBuiltinSchemas(t *testing.T) {
	for name, m := range builtin.Agents() {
		if err := (&inputschema.Checker{}).Check(&m); err != nil {
			t.Fatalf("agent %s: Check = %v", name, err)
		}
		var s struct {
			Description string                     `json:"description"`
			Properties  map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(m.InputSchema, &s); err != nil || s.Description == "" || len(s.Properties) == 0 {
			t.Fatalf("agent %s: input schema without a description or properties (%v)", name, err)
		}
		for prop, raw := range s.Properties {
			if !strings.Contains(string(raw), `"description"`) {
				t.Errorf("agent %s: variable %s has no description", name, prop)
			}
		}
	}
}

// The checker compiles a schema once and names the field of a violation.
func TestCheckInput(t *testing.T) {
	m := &sortie.Manifest{Name: "a", Runtime: "go:a", InputSchema: json.RawMessage(`{"properties":{"n":{"type":"integer"}},"required":["n"]}`)}
	c := &inputschema.Checker{}
	for vars, field := range map[string]string{`{"n":"1"}`: "variables.n", `{}`: "variables.n", ``: "variables.n"} {
		var ve *sortie.ValidationError
		if err := c.CheckInput(m, json.RawMessage(vars)); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("CheckInput(%s) = %v; want a ValidationError naming %s", vars, err, field)
		}
	}
	if err := c.CheckInput(m, json.RawMessage(`{"n":1}`)); err != nil {
		t.Errorf("CheckInput({n:1}) = %v", err)
	}
	if err := c.CheckInput(&sortie.Manifest{Name: "b", Runtime: "go:b"}, json.RawMessage(`{"x":1}`)); err != nil {
		t.Errorf("CheckInput without a schema = %v", err)
	}
}

// Any schema and variables: a nil error or a ValidationError, never a
// panic.
func FuzzCheckInput(f *testing.F) {
	f.Add([]byte(`{"properties":{"n":{"type":"integer","maximum":3}}}`), []byte(`{"n":4}`))
	f.Add([]byte(`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`), []byte(`{}`))
	f.Add([]byte(`{"patternProperties":{"^x":{"pattern":"(a+)+$"}}}`), []byte(`{"xy":"aaaaaaaaaaaaaaaaaaaaaaaa!"}`))
	f.Fuzz(func(t *testing.T, schema, vars []byte) {
		m := &sortie.Manifest{Name: "f", Runtime: "go:f", InputSchema: schema}
		err := (&inputschema.Checker{}).CheckInput(m, vars)
		var ve *sortie.ValidationError
		if err != nil && !errors.As(err, &ve) {
			t.Fatalf("CheckInput(%q, %q) = %v, want nil or a ValidationError", schema, vars, err)
		}
	})
}
