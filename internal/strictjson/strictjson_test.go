package strictjson

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type point struct {
	X int `json:"x"`
	Y int `json:"y,omitempty"`
}

// trailingCases are inputs that hold one valid value followed by more:
// the stray closing brackets that dec.More lets through, a second value,
// and garbage.
var trailingCases = []struct {
	in     string
	offset int
}{
	{`{"x":1}}`, 7},
	{`{"x":1}]`, 7},
	{`{"x":1} }`, 8},
	{`{"x":1}{"x":2}`, 7},
	{`{"x":1} {"x":2}`, 8},
	{`{"x":1},`, 7},
	{`{"x":1}:`, 7},
	{`{"x":1}x`, 7},
	{`{"x":1}` + "\n\x00", 8},
	{`{"x":1}` + "\f", 7},     // form feed is not JSON whitespace
	{`{"x":1}` + "\u00a0", 7}, // nor is a no-break space
	{`{"x":1} "s"`, 8},
	{`{"x":1}null`, 7},
}

func TestUnmarshalRefusesTrailingData(t *testing.T) {
	for _, c := range trailingCases {
		var p point
		err := Unmarshal([]byte(c.in), &p)
		if !errors.Is(err, ErrTrailingData) {
			t.Errorf("Unmarshal(%q) = %v, want ErrTrailingData", c.in, err)
			continue
		}
		if want := "at byte " + strconv.Itoa(c.offset); !strings.HasSuffix(err.Error(), want) {
			t.Errorf("Unmarshal(%q) = %q, want it to end %q", c.in, err, want)
		}
		if json.Valid([]byte(c.in)) {
			t.Errorf("json.Valid(%q) = true; the case does not test trailing data", c.in)
		}
	}
}

func TestUnmarshalAcceptsOneValueWithWhitespace(t *testing.T) {
	for _, in := range []string{
		`{"x":1,"y":2}`,
		" \t\r\n{\"x\":1,\"y\":2}",
		"{\"x\":1,\"y\":2} \t\r\n",
		"\n { \"x\" : 1 , \"y\" : 2 } \n",
	} {
		var p point
		if err := Unmarshal([]byte(in), &p); err != nil {
			t.Errorf("Unmarshal(%q) = %v, want nil", in, err)
			continue
		}
		if want := (point{1, 2}); p != want {
			t.Errorf("Unmarshal(%q) decoded %+v, want %+v", in, p, want)
		}
	}
}

func TestUnmarshalRefusals(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"x":1,"z":2}`, `json: unknown field "z"`},
		{`{"x":"one"}`, "json: cannot unmarshal string into Go struct field point.x of type int"},
		{`{"x":1`, "unexpected end of JSON input"},
		{`{"x":}`, "invalid character '}' looking for beginning of value"},
		{``, ErrEmpty.Error()},
		{" \n\t", ErrEmpty.Error()},
	} {
		var p point
		err := Unmarshal([]byte(c.in), &p)
		if err == nil || err.Error() != c.want {
			t.Errorf("Unmarshal(%q) = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestUnmarshalUseNumber(t *testing.T) {
	var v any
	if err := UnmarshalUseNumber([]byte(`{"n":12345678901234567890}`), &v); err != nil {
		t.Fatalf("UnmarshalUseNumber = %v", err)
	}
	want := map[string]any{"n": json.Number("12345678901234567890")}
	if d := cmp.Diff(want, v); d != "" {
		t.Fatalf("UnmarshalUseNumber decoded (-want +got):\n%s", d)
	}
	if err := UnmarshalUseNumber([]byte(`{"n":1}]`), &v); !errors.Is(err, ErrTrailingData) {
		t.Fatalf("UnmarshalUseNumber(`{\"n\":1}]`) = %v, want ErrTrailingData", err)
	}
}

// FuzzUnmarshal: Scan does not panic on any input; with numbers kept as
// text, Unmarshal into an any accepts exactly what json.Valid does (one
// value, whitespace around it) without a duplicate key (as a
// token-by-token reading finds them); into an any it agrees with
// json.Unmarshal on what it accepts (but for duplicate keys) and how it
// decodes it; into a struct it accepts only input json.Unmarshal accepts
// too, with the same result.
func FuzzUnmarshal(f *testing.F) {
	for _, c := range trailingCases {
		f.Add([]byte(c.in))
	}
	for _, c := range dupCases {
		f.Add([]byte(c.in))
	}
	for _, s := range []string{`{"x":1,"y":2}`, ` {"x":1} `, `{"x":1,"z":2}`, `[1,2]`, `"s"`, `12`, `1 2`, `{}`, ``, `1E700`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Scan(b) // any input: no panic
		var n any
		err := UnmarshalUseNumber(b, &n)
		valid := json.Valid(b)
		dup := valid && hasDuplicateKey(b)
		if (err == nil) != (valid && !dup) || dup != errors.Is(err, ErrDuplicateKey) {
			t.Fatalf("UnmarshalUseNumber(%q) = %v, but json.Valid = %v, duplicate key = %v", b, err, valid, dup)
		}
		var got, want any
		err, uerr := Unmarshal(b, &got), json.Unmarshal(b, &want)
		if (err == nil) != (uerr == nil && !dup) {
			t.Fatalf("Unmarshal(%q) = %v, json.Unmarshal = %v", b, err, uerr)
		}
		if d := cmp.Diff(want, got); err == nil && d != "" {
			t.Fatalf("Unmarshal(%q) decoded differently from json.Unmarshal (-want +got):\n%s", b, d)
		}
		var p, q point
		if Unmarshal(b, &p) != nil {
			return
		}
		if err := json.Unmarshal(b, &q); err != nil || p != q {
			t.Fatalf("Unmarshal(%q) = %+v, json.Unmarshal = %+v, %v", b, p, q, err)
		}
	})
}
