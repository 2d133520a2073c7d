package jsonbody

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sortie-run/sortie"
)

func TestValidateNamesTheField(t *testing.T) {
	fsys := fstest.MapFS{"s/thing.json": {Data: []byte(`{"type": "object", "additionalProperties": false, "required": ["items"],
		"properties": {"items": {"type": "array", "items": {"type": "object", "properties": {"seq": {"type": "integer"}}}}}}`)}}
	s, err := Compile(fsys, "s", "https://example.invalid/")
	if err != nil {
		t.Fatalf("Compile = %v", err)
	}
	for body, field := range map[string]string{
		`{"items": [{"seq": 1}, {"seq": "x"}]}`: "items[1].seq",
		`{"items": [], "extra": 1}`:             "extra",
		`{}`:                                    "items",
		`[1]`:                                   "body",
		`{"items": [`:                           "body",
	} {
		var ve *sortie.ValidationError
		if err := s.Validate("thing", []byte(body)); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("Validate(%s) = %v, want a ValidationError naming %q", body, err, field)
		}
	}
	if err := s.Validate("thing", []byte(`{"items": [{"seq": 2}]}`)); err != nil {
		t.Errorf("Validate(a valid body) = %v", err)
	}
	if err := s.Validate("other", []byte(`{}`)); err == nil {
		t.Error("Validate against an unknown schema returned nil")
	}
}

func TestCheckNamesTheFieldUnderItsRoot(t *testing.T) {
	sch, err := CompileSchema("result_schema", "mem://result.json", []byte(`{"type": "object", "required": ["id"],
		"properties": {"id": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}}`))
	if err != nil {
		t.Fatalf("CompileSchema = %v", err)
	}
	for v, field := range map[string]string{
		`{"id": 1}`:                     "result.id",
		`{"id": "a", "tags": ["x", 2]}`: "result.tags[1]",
		`{}`:                            "result.id",
		`"secret-value"`:                "result",
		`{"id": `:                       "result",
	} {
		var ve *sortie.ValidationError
		err := Check(sch, []byte(v), "result")
		if !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("Check(%s) = %v, want a ValidationError naming %q", v, err, field)
		}
		if err != nil && strings.Contains(err.Error(), "secret-value") {
			t.Errorf("Check(%s) = %v: the error echoes the value", v, err)
		}
	}
	if err := Check(sch, []byte(`{"id": "a"}`), "result"); err != nil {
		t.Errorf("Check(a valid value) = %v", err)
	}
	for _, doc := range []string{`{"type": 3}`, `{`} {
		var ve *sortie.ValidationError
		if _, err := CompileSchema("result_schema", "mem://bad.json", []byte(doc)); !errors.As(err, &ve) || ve.Field != "result_schema" {
			t.Errorf("CompileSchema(%s) = %v, want a ValidationError naming result_schema", doc, err)
		}
	}
}
