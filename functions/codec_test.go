package functions

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

// readAll reads messages until io.EOF or the first error.
func readAll(r *MessageReader) ([]*sortie.Message, error) {
	var out []*sortie.Message
	for {
		m, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

func TestMessageReader(t *testing.T) {
	in := "{\"event\":{\"kind\":\"a\"}}\r\n\n   \n{\"event\":{\"seq\":2,\"kind\":\"b\"}}\n{\"result\":{\"output\":[1]}}"
	got, err := readAll(NewMessageReader(strings.NewReader(in)))
	if err != nil {
		t.Fatalf("Next = %v, want nil", err)
	}
	want := []*sortie.Message{
		{Event: &sortie.Event{Kind: "a"}},
		{Event: &sortie.Event{Seq: 2, Kind: "b"}},
		{Result: &sortie.Result{Output: json.RawMessage("[1]")}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("messages read (-want +got):\n%s", d)
	}
}

func TestMessageReaderInvalidLines(t *testing.T) {
	tests := []struct {
		in, field, reason string
	}{
		{"{\"event\":{\"kind\":\"a\"}}\n\n{\"event\":{\"kind\":\"\"}}\n", "event.kind", "line 3:"},
		{"not json\n", "message", "line 1:"},
		{"{\"event\":{\"kind\":\"a\"},\"result\":{}}\n", "message", "line 1: exactly one"},
		{"{\"bogus\":1}\n", "message", "line 1: json: unknown field"},
		{"{\"interrupt\":{\"state\":\"failed\"}}", "interrupt.state", "line 1:"},
	}
	for _, tt := range tests {
		r := NewMessageReader(strings.NewReader(tt.in))
		_, err := readAll(r)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != tt.field || !strings.HasPrefix(ve.Reason, tt.reason) {
			t.Errorf("reading %q: error %v, want a ValidationError for %s starting %q", tt.in, err, tt.field, tt.reason)
		}
	}
}

func TestMessageReaderOversizeLine(t *testing.T) {
	big := `{"event":{"kind":"a","text":"` + strings.Repeat("x", sortie.MaxMessageBytes) + `"}}`
	in := big + "\n" + `{"event":{"kind":"after"}}` + "\n"
	r := NewMessageReader(strings.NewReader(in))
	_, err := r.Next()
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "message" || !strings.Contains(ve.Reason, "line 1") || !strings.Contains(ve.Reason, "limit 1048576") {
		t.Fatalf("Next on a line over the limit = %v, want a ValidationError naming line 1 and the limit", err)
	}
	m, err := r.Next()
	if err != nil || m.Event == nil || m.Event.Kind != "after" {
		t.Errorf("Next after the oversize line = %+v, %v; want the event on line 2", m, err)
	}
}

func TestMessageReaderLineAtLimit(t *testing.T) {
	prefix, suffix := `{"result":{"output":"`, `"}}`
	line := prefix + strings.Repeat("x", sortie.MaxMessageBytes-len(prefix)-len(suffix)) + suffix
	_, err := NewMessageReader(strings.NewReader(line + "\r\n")).Next()
	var ve *sortie.ValidationError
	// The line fits the message limit; its output is over the result limit.
	if !errors.As(err, &ve) || ve.Field != "result.output" {
		t.Errorf("Next on a line of exactly MaxMessageBytes = %v, want it decoded (and refused for result.output)", err)
	}
}

func TestWriteMessage(t *testing.T) {
	var buf bytes.Buffer
	m := &sortie.Message{Event: &sortie.Event{Seq: 1, Kind: "a", Text: "<b>&", Data: json.RawMessage(`{ "x" : 1 }`)}}
	if err := WriteMessage(&buf, m); err != nil {
		t.Fatalf("WriteMessage = %v", err)
	}
	if want := `{"event":{"seq":1,"kind":"a","text":"<b>&","data":{"x":1}}}` + "\n"; buf.String() != want {
		t.Errorf("WriteMessage wrote %q, want %q", buf.String(), want)
	}
	if err := WriteMessage(&buf, &sortie.Message{}); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("WriteMessage(empty message) = %v, want ErrInvalidArgument", err)
	}
}

func TestReadInvocation(t *testing.T) {
	inv := testInvocation("go:h", `{"a":1}`)
	b, _ := json.Marshal(inv)
	got, err := ReadInvocation(bytes.NewReader(append(b, '\n')))
	if err != nil {
		t.Fatalf("ReadInvocation = %v", err)
	}
	if d := cmp.Diff(inv, got); d != "" {
		t.Errorf("ReadInvocation (-want +got):\n%s", d)
	}
	huge := io.MultiReader(strings.NewReader(`{"version":"`), strings.NewReader(strings.Repeat("x", 2*sortie.MaxInvocationBytes)))
	var ve *sortie.ValidationError
	if _, err := ReadInvocation(huge); !errors.As(err, &ve) || ve.Field != "invocation" || !strings.Contains(ve.Reason, "limit") {
		t.Errorf("ReadInvocation(2×limit) = %v, want a ValidationError naming the limit", err)
	}
}

// FuzzMessageReader: no panic, every message read is valid and writes back
// to a line that reads as the same message.
func FuzzMessageReader(f *testing.F) {
	f.Add([]byte("{\"event\":{\"kind\":\"a\",\"data\":{\"x\":[1,2]}}}\n{\"result\":{\"output\":null}}\n"))
	f.Add([]byte("{\"error\":{\"type\":\"x\",\"message\":\"m\",\"retryable\":true}}\r\n\n"))
	f.Add([]byte("{\"interrupt\":{\"state\":\"input-required\",\"prompt\":\"p\",\"checkpoint\":{}}}"))
	f.Add([]byte("{\"event\":{\"kind\":\"\"}}\nnot json\n{\"result\":{}}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewMessageReader(bytes.NewReader(in))
		for range 1000 {
			m, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if !errors.Is(err, sortie.ErrInvalidArgument) {
					t.Fatalf("Next = %v, want a ValidationError or io.EOF", err)
				}
				continue
			}
			if err := m.Validate(); err != nil {
				t.Fatalf("Next returned an invalid message %+v: %v", m, err)
			}
			var buf bytes.Buffer
			if err := WriteMessage(&buf, m); err != nil {
				t.Fatalf("WriteMessage(%+v) = %v", m, err)
			}
			back, err := NewMessageReader(&buf).Next()
			if err != nil {
				t.Fatalf("reading back %q = %v", buf.String(), err)
			}
			if d := cmp.Diff(normalize(t, m), normalize(t, back)); d != "" {
				t.Fatalf("message changed on write and read (-read +reread):\n%s", d)
			}
		}
		t.Fatalf("more than 1000 messages from %d bytes", len(in))
	})
}

// normalize returns m's canonical JSON (raw JSON compacted) as a value.
func normalize(t *testing.T, m *sortie.Message) any {
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("marshal %+v: %v", m, err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return v
}
