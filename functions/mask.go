package functions

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/sortie-run/sortie"
)

// masker replaces an attempt's configuration values, wherever the agent
// echoes them, with a marker naming the variable: "[REDACTED:NAME]". It
// knows each value as it is and in its base64 (padded and not), base64url
// (padded and not) and hexadecimal (lower and upper case) forms. A nil
// masker masks nothing.
type masker struct {
	r       *strings.Replacer
	needles [][]byte // every form, for a quick look before decoding JSON
}

// maskMin is the shortest value masked: shorter ones are refused when a
// configuration is sealed (sortie.MinConfigValueBytes).
const maskMin = sortie.MinConfigValueBytes

// newMasker returns the masker of cfg, nil when cfg has no value to mask.
func newMasker(cfg map[string]string) *masker {
	type pair struct{ form, marker string }
	var pairs []pair
	for name, v := range cfg {
		if len(v) < maskMin {
			continue
		}
		marker := "[REDACTED:" + name + "]"
		for _, form := range valueForms([]byte(v)) {
			pairs = append(pairs, pair{form, marker})
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	// Longer forms first: the replacer tries patterns in argument order, so
	// a padded form wins over its unpadded prefix, and a value over one it
	// contains.
	slices.SortFunc(pairs, func(a, b pair) int {
		return cmp.Or(cmp.Compare(len(b.form), len(a.form)), strings.Compare(a.form, b.form))
	})
	args := make([]string, 0, 2*len(pairs))
	m := &masker{}
	for _, p := range slices.CompactFunc(pairs, func(a, b pair) bool { return a.form == b.form }) {
		args = append(args, p.form, p.marker)
		m.needles = append(m.needles, []byte(p.form))
	}
	m.r = strings.NewReplacer(args...)
	return m
}

// valueForms returns v and its encoded forms.
func valueForms(v []byte) []string {
	return []string{
		string(v),
		base64.StdEncoding.EncodeToString(v), base64.RawStdEncoding.EncodeToString(v),
		base64.URLEncoding.EncodeToString(v), base64.RawURLEncoding.EncodeToString(v),
		hex.EncodeToString(v), strings.ToUpper(hex.EncodeToString(v)),
	}
}

// text masks s.
func (m *masker) text(s string) string {
	if m == nil {
		return s
	}
	return m.r.Replace(s)
}

// holds reports whether b may hold a value: one of its forms, or a JSON
// escape that could spell one.
func (m *masker) holds(b []byte) bool {
	if bytes.IndexByte(b, '\\') >= 0 {
		return true
	}
	for _, n := range m.needles {
		if bytes.Contains(b, n) {
			return true
		}
	}
	return false
}

// json masks the strings, keys and numbers of the JSON value b; the
// result is valid JSON when b is (a masked number becomes a string).
// Invalid JSON is masked as text.
func (m *masker) json(b json.RawMessage) json.RawMessage {
	if m == nil || len(b) == 0 || !m.holds(b) {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return json.RawMessage(m.text(string(b)))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m.value(v)); err != nil {
		return json.RawMessage(m.text(string(b)))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// value masks a decoded JSON value.
func (m *masker) value(v any) any {
	switch v := v.(type) {
	case string:
		return m.text(v)
	case json.Number:
		if s := m.text(string(v)); s != string(v) {
			return s
		}
		return v
	case []any:
		for i := range v {
			v[i] = m.value(v[i])
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[m.text(k)] = m.value(x)
		}
		return out
	}
	return v
}

// event masks an event's kind, text and data.
func (m *masker) event(e sortie.Event) sortie.Event {
	if m == nil {
		return e
	}
	e.Kind = clipBytes(m.text(e.Kind), 64)
	e.Text = clip(m.text(e.Text))
	e.Data = m.json(e.Data)
	return e
}

// outcome masks a result, an error's type and message, and an interrupt's
// prompt and checkpoint.
func (m *masker) outcome(o sortie.Outcome) sortie.Outcome {
	if m == nil {
		return o
	}
	o.Result = m.json(o.Result)
	if o.Error != nil {
		e := *o.Error
		e.Type, e.Message = clipBytes(m.text(e.Type), 64), clip(m.text(e.Message))
		o.Error = &e
	}
	if o.Interrupt != nil {
		in := *o.Interrupt
		in.Prompt, in.Checkpoint = clip(m.text(in.Prompt)), m.json(in.Checkpoint)
		o.Interrupt = &in
	}
	return o
}

// clipBytes cuts s to at most n bytes of valid UTF-8.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// logger returns log with every message and attribute value masked: the
// attempt log carries no configuration value either.
func (m *masker) logger(log *slog.Logger) *slog.Logger {
	if m == nil {
		return log
	}
	return slog.New(&maskHandler{h: log.Handler(), m: m})
}

// maskHandler masks the records it passes on to h.
type maskHandler struct {
	h slog.Handler
	m *masker
}

func (mh *maskHandler) Enabled(ctx context.Context, l slog.Level) bool { return mh.h.Enabled(ctx, l) }

func (mh *maskHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, mh.m.text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(mh.m.attr(a))
		return true
	})
	return mh.h.Handle(ctx, out)
}

func (mh *maskHandler) WithAttrs(as []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(as))
	for i, a := range as {
		masked[i] = mh.m.attr(a)
	}
	return &maskHandler{h: mh.h.WithAttrs(masked), m: mh.m}
}

func (mh *maskHandler) WithGroup(name string) slog.Handler {
	return &maskHandler{h: mh.h.WithGroup(name), m: mh.m}
}

// attr masks an attribute's value: strings and anything printed as text
// (errors, values of other kinds), groups attribute by attribute.
func (m *masker) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, m.text(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i := range g {
			out[i] = m.attr(g[i])
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		s := fmt.Sprint(v.Any())
		if masked := m.text(s); masked != s {
			return slog.String(a.Key, masked)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
