package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Errors of a value that is missing or followed by more input
// ([ErrDuplicateKey] is in keys.go). Decoding
// errors of the value itself are encoding/json's: a [*json.SyntaxError],
// a [*json.UnmarshalTypeError], or `json: unknown field "NAME"`.
var (
	// ErrEmpty: the input holds no JSON value (only whitespace, or nothing).
	ErrEmpty = errors.New("no JSON value")
	// ErrTrailingData: something other than whitespace follows the value
	// (a second value, a stray "}" or "]", any other byte). The error
	// wrapping it gives the byte offset; it never quotes the input.
	ErrTrailingData = errors.New("data after the JSON value")
)

// Unmarshal decodes b, which must hold exactly one JSON value, into v. An
// object field that v has no place for is refused (v may be a struct, a
// map, or any; for a map or an any every field has a place), and so is
// anything but JSON whitespace after the value, and any object (at any
// depth) holding a key twice; whitespace before and after is fine. Errors
// are described in [ErrEmpty], [ErrTrailingData] and [ErrDuplicateKey].
func Unmarshal(b []byte, v any) error {
	return decode(b, v, false)
}

// UnmarshalUseNumber is [Unmarshal] with numbers decoded into an
// interface value as [json.Number] (their text, no float64 rounding).
func UnmarshalUseNumber(b []byte, v any) error {
	return decode(b, v, true)
}

func decode(b []byte, v any, useNumber bool) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if useNumber {
		dec.UseNumber()
	}
	switch err := dec.Decode(v); {
	case errors.Is(err, io.EOF):
		return ErrEmpty
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("unexpected end of JSON input")
	case err != nil:
		return err
	}
	end := dec.InputOffset()
	if rest := bytes.TrimLeft(b[end:], " \t\r\n"); len(rest) > 0 {
		return fmt.Errorf("%w at byte %d", ErrTrailingData, len(b)-len(rest))
	}
	_, err := Scan(b[:end])
	return err
}
