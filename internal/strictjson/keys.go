package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrDuplicateKey: an object holds the same key twice (compared after
// unescaping, as a decoder would see them). encoding/json keeps the last
// value and a JSON Schema validator may see either, so a value with a
// duplicate key means different things to different readers; Sortie
// refuses it. The error wrapping it is a [*DuplicateKeyError].
var ErrDuplicateKey = errors.New("duplicate object key")

// maxKeyQuote is how many bytes of a duplicated key an error quotes.
const maxKeyQuote = 80

// DuplicateKeyError is a key found twice in one object: Key is the key
// (unescaped), Offset the byte offset of its second occurrence, Path
// where the object is in the value: keys joined by "." and array indexes
// as "[i]" ("variables.items[2]"; "" for the value itself), each key
// clipped to 64 bytes.
type DuplicateKeyError struct {
	Key    string
	Offset int
	Path   string
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("duplicate object key %.*q at byte %d", maxKeyQuote, e.Key, e.Offset)
}

// Field names the object holding the key as a field under root, the
// name of the whole value: root itself, "root.a[1].b", or "root[0].a";
// with root "", just Path.
func (e *DuplicateKeyError) Field(root string) string {
	switch {
	case e.Path == "" || root == "":
		return root + e.Path
	case e.Path[0] == '[':
		return root + e.Path
	}
	return root + "." + e.Path
}

// Is reports whether target is [ErrDuplicateKey].
func (e *DuplicateKeyError) Is(target error) bool { return target == ErrDuplicateKey }

// Scan walks b, which should be valid JSON (see [json.Valid]; for
// anything else it returns without panicking, but what it reports is
// unspecified), in one pass. It returns how
// deeply b nests arrays and objects (0 for a scalar) and, for the first
// object that holds a key twice, a [*DuplicateKeyError] (then depth is
// the depth reached so far). It allocates only for objects of many keys
// and keys with escapes or invalid UTF-8, so it suits values of any size.
func Scan(b []byte) (depth int, err error) {
	var s scanner
	return s.scan(b)
}

// ScanTop is [Scan] checking only the keys of objects at most levels
// deep (1: the value's own keys), so a key twice deeper down, which the
// caller refuses part by part (a batch's records), does not hide a key
// twice at the top, nor stand for one.
func ScanTop(b []byte, levels int) (depth int, err error) {
	s := scanner{levels: levels}
	return s.scan(b)
}

// smallObject is how many keys an object holds before its keys are also
// kept in a map (below it, a linear search is cheaper).
const smallObject = 16

// scanner is the state of [Scan]: the open containers and the keys of
// the open objects.
type scanner struct {
	open  []frame  // the open arrays and objects, innermost last
	keys  [][]byte // the keys of the open objects, outer objects' first
	maps  []map[string]struct{}
	depth int
	// levels: only objects at most this deep have their keys checked;
	// 0 is every object.
	levels int
}

// frame is one open array or object.
type frame struct {
	object bool
	first  int // index in keys of the object's first key
	index  int // an array's element index
	set    map[string]struct{}
}

func (s *scanner) scan(b []byte) (int, error) {
	expectKey := false
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end := stringEnd(b, i+1)
			if expectKey && (s.levels == 0 || len(s.open) <= s.levels) {
				if err := s.addKey(b[i+1:end], i); err != nil {
					return s.depth, err
				}
				expectKey = false
			}
			i = end
		case '{':
			s.push(true)
			expectKey = true
		case '[':
			s.push(false)
			expectKey = false
		case '}', ']':
			s.pop()
			expectKey = false
		case ',':
			if n := len(s.open); n > 0 {
				s.open[n-1].index++
				expectKey = s.open[n-1].object
			}
		case ':':
			expectKey = false
		}
	}
	return s.depth, nil
}

func (s *scanner) push(object bool) {
	s.open = append(s.open, frame{object: object, first: len(s.keys)})
	s.depth = max(s.depth, len(s.open))
}

func (s *scanner) pop() {
	if len(s.open) == 0 {
		return
	}
	f := s.open[len(s.open)-1]
	s.open = s.open[:len(s.open)-1]
	if !f.object {
		return
	}
	s.keys = s.keys[:f.first]
	if f.set != nil {
		clear(f.set)
		s.maps = append(s.maps, f.set)
	}
}

// addKey records raw (a key's bytes between its quotes, at byte offset
// at) in the innermost object, or reports it duplicated.
func (s *scanner) addKey(raw []byte, at int) error {
	key := raw
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		key = unescape(raw)
	}
	f := &s.open[len(s.open)-1]
	keys := s.keys[f.first:]
	dup := false
	if f.set != nil {
		_, dup = f.set[string(key)]
	} else {
		for _, k := range keys {
			if bytes.Equal(k, key) {
				dup = true
				break
			}
		}
	}
	if dup {
		return &DuplicateKeyError{Key: string(key), Offset: at, Path: s.path()}
	}
	s.keys = append(s.keys, key)
	switch {
	case f.set != nil:
		f.set[string(key)] = struct{}{}
	case len(keys)+1 == smallObject:
		f.set = s.newSet()
		for _, k := range s.keys[f.first:] {
			f.set[string(k)] = struct{}{}
		}
	}
	return nil
}

// path is where the innermost open object is, in the form of
// [DuplicateKeyError.Path].
func (s *scanner) path() string {
	var b strings.Builder
	for i, f := range s.open[:len(s.open)-1] {
		if !f.object {
			fmt.Fprintf(&b, "[%d]", f.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		// f's keys end where the next container's begin; its last key
		// holds that container.
		if end := s.open[i+1].first; end > f.first {
			k := s.keys[end-1]
			b.WriteString(strings.ToValidUTF8(string(k[:min(len(k), 64)]), "\uFFFD"))
		}
	}
	return b.String()
}

func (s *scanner) newSet() map[string]struct{} {
	if n := len(s.maps); n > 0 {
		m := s.maps[n-1]
		s.maps = s.maps[:n-1]
		return m
	}
	return make(map[string]struct{}, 2*smallObject)
}

// stringEnd returns the index of the quote that ends the string whose
// contents begin at b[from] (len(b) if none): the first quote after an
// even number of backslashes.
func stringEnd(b []byte, from int) int {
	for {
		q := bytes.IndexByte(b[from:], '"')
		if q < 0 {
			return len(b)
		}
		q += from
		n := 0
		for j := q - 1; j >= from && b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		from = q + 1
	}
}

// unescape decodes a key's raw bytes as a JSON decoder would (escapes
// resolved, invalid UTF-8 replaced by U+FFFD).
func unescape(raw []byte) []byte {
	var s string
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	if json.Unmarshal(q, &s) != nil {
		return raw
	}
	return []byte(s)
}
