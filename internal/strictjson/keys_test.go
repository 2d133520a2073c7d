package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// dupCases hold a key twice in one object; the offset is that of the
// second occurrence's opening quote.
var dupCases = []struct {
	in, key, path string
	offset        int
}{
	{`{"a":1,"a":2}`, "a", "", 7},
	{`{"agent":"probe","agent":"textstats"}`, "agent", "", 17},
	{`{"variables":{"top":"many","top":5}}`, "top", "variables", 27},
	{`[{"x":1},{"y":[{"k":1,"k":1}]}]`, "k", "[1].y[0]", 22},
	{`{"a":1,"\u0061":2}`, "a", "", 7},           // the same key, escaped
	{`{"\/":1,"/":2}`, "/", "", 8},               // an escaped solidus
	{`{"":1,"":2}`, "", "", 6},                   // the empty key
	{"{\"\xff\":1,\"\xfe\":2}", "\uFFFD", "", 7}, // both decode to U+FFFD
	{`{"a":{"b":1},"c":{"b":1},"a":3}`, "a", "", 25},
	{`{"p":[1,2,{"q":[[],{"r":{"s":1,"s":2}}]}]}`, "s", "p[2].q[1].r", 31},
}

func TestUnmarshalRefusesDuplicateKeys(t *testing.T) {
	for _, c := range dupCases {
		var v any
		err := Unmarshal([]byte(c.in), &v)
		var de *DuplicateKeyError
		if !errors.As(err, &de) || !errors.Is(err, ErrDuplicateKey) {
			t.Errorf("Unmarshal(%q) = %v, want a DuplicateKeyError", c.in, err)
			continue
		}
		if de.Key != c.key || de.Offset != c.offset || de.Path != c.path {
			t.Errorf("Unmarshal(%q): key %q at %d in %q, want %q at %d in %q", c.in, de.Key, de.Offset, de.Path, c.key, c.offset, c.path)
		}
	}
	var p struct {
		X int `json:"x"`
	}
	if err := Unmarshal([]byte(`{"x":1,"x":2}`), &p); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("Unmarshal into a struct = %v, want ErrDuplicateKey", err)
	}
}

func TestScanAcceptsDistinctKeys(t *testing.T) {
	for _, in := range []string{
		`{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}`, // the same key in different objects
		`{"a\"":1,"a":2,"a\\":3}`,                   // escapes that end differently
		`{"k":"{\"k\":1,\"k\":2}"}`,                 // duplicates inside a string are text
		`["a","a"]`,
	} {
		if _, err := Scan([]byte(in)); err != nil {
			t.Errorf("Scan(%q) = %v, want nil", in, err)
		}
	}
}

// TestScanLargeObjects: an object past smallObject keys is checked by
// its map, which is reused by later objects without keeping their keys.
func TestScanLargeObjects(t *testing.T) {
	obj := func(n int, extra string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, "%q:[{\"k%d\":1}],", fmt.Sprint("k", i), i)
		}
		b.WriteString(extra + "}")
		return b.String()
	}
	in := "[" + obj(100, `"z":0`) + "," + obj(100, `"z":0`) + "]"
	if d, err := Scan([]byte(in)); err != nil || d != 4 {
		t.Fatalf("Scan(two objects of 101 keys) = %d, %v; want 4, nil", d, err)
	}
	for _, n := range []int{smallObject - 1, smallObject, 100} {
		in := "[" + obj(100, `"z":0`) + "," + obj(n, `"k3":0`) + "]"
		var de *DuplicateKeyError
		if _, err := Scan([]byte(in)); !errors.As(err, &de) || de.Key != "k3" {
			t.Errorf("Scan(object of %d keys, k3 twice) = %v, want k3 duplicated", n+1, err)
		}
	}
}

func TestScanDepth(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`1`, 0}, {`"[{"`, 0}, {`[]`, 1}, {`{"a":[[{}]],"b":[]}`, 4}, {`[[1],[[2]]]`, 3},
	} {
		if d, err := Scan([]byte(c.in)); err != nil || d != c.want {
			t.Errorf("Scan(%q) = %d, %v; want %d", c.in, d, err, c.want)
		}
	}
}

// ScanTop checks the keys of the top levels only: a key twice deeper
// down neither stands for one at the top nor hides it.
func TestScanTop(t *testing.T) {
	for _, c := range []struct {
		in, key string
	}{
		{`{"a":[{"x":1,"x":2}],"b":1}`, ""},
		{`{"a":[{"x":1,"x":2}],"a":[]}`, "a"},
		{`{"a":{"x":1},"b":{"x":2,"y":{"z":1,"z":2}}}`, ""},
	} {
		_, err := ScanTop([]byte(c.in), 1)
		got := ""
		if de := (*DuplicateKeyError)(nil); errors.As(err, &de) {
			got = de.Key
		}
		if got != c.key || (c.key == "" && err != nil) {
			t.Errorf("ScanTop(%s, 1) = %v, want key %q twice (\"\" none)", c.in, err, c.key)
		}
	}
	if _, err := ScanTop([]byte(`{"a":{"x":1,"x":2}}`), 2); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("ScanTop(x twice at level 2, 2) = %v, want it refused", err)
	}
}

func TestDuplicateKeyErrorTruncatesKey(t *testing.T) {
	long := strings.Repeat("k", 5000)
	err := Unmarshal([]byte(`{"`+long+`":1,"`+long+`":2}`), new(any))
	if !errors.Is(err, ErrDuplicateKey) || len(err.Error()) > 200 {
		t.Fatalf("Unmarshal = %.300v (%d bytes), want a duplicate key error of at most 200 bytes", err, len(err.Error()))
	}
}

// hasDuplicateKey is a second implementation for the fuzz test: it
// reads valid JSON b token by token, keeping each open object's keys.
func hasDuplicateKey(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type level struct {
		keys   map[string]bool
		object bool
		atKey  bool
	}
	var open []*level
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return false
		}
		var top *level
		if len(open) > 0 {
			top = open[len(open)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.object && top.atKey {
			if top.keys[s] {
				return true
			}
			top.keys[s] = true
			top.atKey = false
			continue
		}
		if top != nil && top.object {
			top.atKey = true
		}
		switch tok {
		case json.Delim('{'):
			open = append(open, &level{keys: map[string]bool{}, object: true, atKey: true})
		case json.Delim('['):
			open = append(open, &level{})
		case json.Delim('}'), json.Delim(']'):
			open = open[:len(open)-1]
			if len(open) > 0 && open[len(open)-1].object {
				open[len(open)-1].atKey = true
			}
		}
	}
}

// BenchmarkScan: one pass over 16 MiB of objects of 8 short keys, in an
// array (report MB/s with -benchmem).
func BenchmarkScan(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("[")
	for buf.Len() < 16<<20 {
		buf.WriteString(`{"id":12345,"name":"some text value","tags":["a","b"],"n":1.5,"ok":true,"x":null,"y":"z","w":{"q":1}},`)
	}
	buf.WriteString("{}]")
	in := buf.Bytes()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := Scan(in); err != nil {
			b.Fatal(err)
		}
	}
}
