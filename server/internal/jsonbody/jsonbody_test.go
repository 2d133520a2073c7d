package jsonbody

import (
	"errors"
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
