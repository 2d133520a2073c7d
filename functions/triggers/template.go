package triggers

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A template is a string with "${path}" placeholders that read the event:
// a dot path into its JSON ("detail.bucket.name", "Records.0.s3") or a
// pseudo-field ("@id", "@kind", "@source", "@type", "@subject",
// "@message", "@envelope" and "@envelope.PATH" for the envelope an
// unwrapped event came in). "$${" is a literal "${". A template that is exactly one
// placeholder takes the value's JSON type (number, object, ...);
// placeholders inside longer text insert strings as they are and other
// values as compact JSON. Templates read only the event: there are no
// functions, files or environment.
type template struct {
	parts []part
}

type part struct {
	lit  string
	path string // set for a placeholder
}

// compileTemplate parses s; the error says what is wrong with it.
func compileTemplate(s string) (*template, error) {
	t := &template{}
	var lit strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("%q: unclosed ${ at byte %d", s, i)
			}
			p := s[i+2 : i+end]
			if err := checkPath(p); err != nil {
				return nil, fmt.Errorf("%q: %v", s, err)
			}
			if lit.Len() > 0 {
				t.parts = append(t.parts, part{lit: lit.String()})
				lit.Reset()
			}
			t.parts = append(t.parts, part{path: p})
			i += end + 1
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	if lit.Len() > 0 || len(t.parts) == 0 {
		t.parts = append(t.parts, part{lit: lit.String()})
	}
	return t, nil
}

// value renders the template: a lone placeholder keeps the value's type.
func (t *template) value(ev *Event) (any, error) {
	if len(t.parts) == 1 && t.parts[0].path != "" {
		return ev.field(t.parts[0].path)
	}
	return t.text(ev)
}

// text renders the template as a string.
func (t *template) text(ev *Event) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.path == "" {
			b.WriteString(p.lit)
			continue
		}
		v, err := ev.field(p.path)
		if err != nil {
			return "", err
		}
		if s, ok := scalarText(v); ok {
			b.WriteString(s)
			continue
		}
		j, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("%s: %v", p.path, err)
		}
		b.Write(j)
	}
	return b.String(), nil
}

// valueTemplate is a JSON value whose strings are templates.
type valueTemplate struct {
	str *template                 // a string
	obj map[string]*valueTemplate // an object
	arr []*valueTemplate          // an array
	lit any                       // a number, boolean or null
}

// compileValue compiles a decoded JSON value; field names the value in
// errors ("variables.bucket").
func compileValue(v any, field string) (*valueTemplate, error) {
	switch x := v.(type) {
	case string:
		t, err := compileTemplate(x)
		if err != nil {
			return nil, fieldErr{field, err}
		}
		return &valueTemplate{str: t}, nil
	case map[string]any:
		vt := &valueTemplate{obj: make(map[string]*valueTemplate, len(x))}
		for k, e := range x {
			c, err := compileValue(e, field+"."+k)
			if err != nil {
				return nil, err
			}
			vt.obj[k] = c
		}
		return vt, nil
	case []any:
		vt := &valueTemplate{arr: make([]*valueTemplate, len(x))}
		for i, e := range x {
			c, err := compileValue(e, fmt.Sprintf("%s[%d]", field, i))
			if err != nil {
				return nil, err
			}
			vt.arr[i] = c
		}
		return vt, nil
	}
	return &valueTemplate{lit: v}, nil
}

// render builds the value for ev; field names it in errors.
func (vt *valueTemplate) render(ev *Event, field string) (any, error) {
	switch {
	case vt.str != nil:
		v, err := vt.str.value(ev)
		if err != nil {
			return nil, fieldErr{field, err}
		}
		return v, nil
	case vt.obj != nil:
		out := make(map[string]any, len(vt.obj))
		for k, c := range vt.obj {
			v, err := c.render(ev, field+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case vt.arr != nil:
		out := make([]any, len(vt.arr))
		for i, c := range vt.arr {
			v, err := c.render(ev, fmt.Sprintf("%s[%d]", field, i))
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return vt.lit, nil
}

// fieldErr names the rule field a template error is in.
type fieldErr struct {
	field string
	err   error
}

func (e fieldErr) Error() string { return e.field + ": " + e.err.Error() }
func (e fieldErr) Unwrap() error { return e.err }
