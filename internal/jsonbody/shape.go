package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// MaxDepth is how deeply a request body may nest as a whole: four times
// sortie.MaxJSONDepth, so a body whose values nest up to that limit under
// a few levels of request passes here and is refused later naming the
// field, while a body of nothing but brackets is refused at once.
const MaxDepth = 4 * sortie.MaxJSONDepth

// CheckShape refuses a request body b nested deeper than [MaxDepth], or
// holding an object key twice anywhere (which a schema check and a
// decoder, or two decoders, might read differently), as a
// [*sortie.ValidationError]: field "body" for the depth, else the object
// holding the key ("variables.a[0]"; "body" for the top level). A body
// starting with a UTF-8 byte-order mark, and one that is not valid UTF-8
// (encoding/json would read U+FFFD in place of the bad bytes, so the value
// kept would not be the one sent), are refused saying so, naming the first
// bad byte (field "body"); any other body that is not valid JSON passes:
// its decoder reports it.
func CheckShape(b []byte) error {
	if bytes.HasPrefix(b, []byte(utf8BOM)) {
		return sortie.Invalidf("body", "%s", bomReason)
	}
	if n := invalidUTF8At(b); n >= 0 {
		return sortie.Invalidf("body", "not valid UTF-8 at byte %d: JSON text is UTF-8 (RFC 8259 §8.1)", n)
	}
	d, err := strictjson.Scan(b)
	if d > MaxDepth {
		return sortie.Invalidf("body", "nested %d levels deep; a request body may nest at most %d levels (jsonbody.MaxDepth), and each value in it at most sortie.MaxJSONDepth (%d)", d, MaxDepth, sortie.MaxJSONDepth)
	}
	var de *strictjson.DuplicateKeyError
	if errors.As(err, &de) && json.Valid(b) {
		field := de.Field("")
		if field == "" || field[0] == '[' {
			field = "body" + field
		}
		return sortie.Invalidf(field, "%v", err)
	}
	return nil
}

// invalidUTF8At is the offset of the first byte of b that is not valid
// UTF-8, or -1.
func invalidUTF8At(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}
