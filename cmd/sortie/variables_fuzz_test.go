package main

import (
	"encoding/json"
	"io"
	"testing"
)

// printVariables takes any input schema a host answers: it prints or
// errs, never panics.
func FuzzPrintVariables(f *testing.F) {
	f.Add([]byte(greetAgent))
	f.Add([]byte(`{"properties":{"a":{"type":["string","null"],"enum":[1,"x"],"minimum":1}},"additionalProperties":false}`))
	f.Add([]byte(`{"properties":[]}`))
	f.Add([]byte(`{"properties":{"a":true,"b":null}}`))
	f.Fuzz(func(t *testing.T, schema []byte) {
		if !json.Valid(schema) {
			return
		}
		_ = printVariables(io.Discard, schema)
	})
}
