package triggers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A glob is a pattern over a whole string: "*" matches any run of
// characters (including "/" and none), "?" matches one character, "\"
// makes the next character literal; everything else matches itself.
// Unlike path.Match, "*" crosses "/", so "uploads/*.csv" matches
// "uploads/2026/a.csv".
type glob []rune

// compileGlob checks a pattern: a trailing "\" is refused.
func compileGlob(p string) (glob, error) {
	if !utf8.ValidString(p) {
		return nil, errors.New("pattern is not valid UTF-8")
	}
	r := []rune(p)
	for i := 0; i < len(r); i++ {
		if r[i] == '\\' {
			if i == len(r)-1 {
				return nil, fmt.Errorf("pattern %q ends in an unfinished escape \\", p)
			}
			i++
		}
	}
	return r, nil
}

// match reports whether s matches the whole pattern, backtracking only to
// the last "*" (linear in practice, O(len(p)·len(s)) at worst).
func (g glob) match(s string) bool {
	str := []rune(s)
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(str) {
		if pi < len(g) {
			switch c := g[pi]; {
			case c == '*':
				star, mark = pi, si
				pi++
				continue
			case c == '?':
				pi, si = pi+1, si+1
				continue
			case c == '\\' && pi+1 < len(g) && g[pi+1] == str[si]:
				pi, si = pi+2, si+1
				continue
			case c != '\\' && c == str[si]:
				pi, si = pi+1, si+1
				continue
			}
		}
		if star < 0 {
			return false
		}
		mark++
		pi, si = star+1, mark
	}
	for pi < len(g) && g[pi] == '*' {
		pi++
	}
	return pi == len(g)
}

// checkPath checks a field path: dot-separated, non-empty segments; a
// segment of digits indexes an array. Pseudo-fields start with "@".
func checkPath(p string) error {
	if p == "" {
		return errors.New("empty field path")
	}
	if len(p) > 256 {
		return fmt.Errorf("field path of %d bytes, limit 256", len(p))
	}
	for _, seg := range strings.Split(p, ".") {
		if seg == "" {
			return fmt.Errorf("field path %q has an empty segment", p)
		}
	}
	return nil
}

// lookup returns the value at a dot path in a decoded JSON document.
func lookup(doc any, p string) (any, error) {
	v := doc
	walked := ""
	for _, seg := range strings.Split(p, ".") {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok {
				return nil, fmt.Errorf("%s: no field %q in the event%s", p, seg, at(walked))
			}
			v = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("%s: %q is not an index of the %d-item array%s", p, seg, len(x), at(walked))
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("%s: %s is a %s, not an object", p, orRoot(walked), kindOf(v))
		}
		walked = join(walked, seg)
	}
	return v, nil
}

func at(walked string) string {
	if walked == "" {
		return ""
	}
	return " at " + walked
}

func orRoot(walked string) string {
	if walked == "" {
		return "the event"
	}
	return walked
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// scalarText is the text of a string, number or boolean; ok is false for
// null, objects and arrays.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

func isUTF8(s string) bool { return utf8.ValidString(s) }
