package triggers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true}, {"*", "a/b/c", true}, {"uploads/*.csv", "uploads/2026/a.csv", true},
		{"uploads/*.csv", "uploads/a.json", false}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"ObjectCreated:*", "ObjectCreated:Put", true}, {"ObjectCreated:*", "ObjectRemoved:Delete", false},
		{`a\*b`, "a*b", true}, {`a\*b`, "axb", false}, {"*a*b*", "xxaxxbxx", true}, {"*a*b", "ba", false},
		{"é?", "éü", true}, {"exact", "exact", true}, {"exact", "exactly", false},
	} {
		g, err := compileGlob(tc.pat)
		if err != nil {
			t.Fatalf("compileGlob(%q) = %v", tc.pat, err)
		}
		if got := g.match(tc.s); got != tc.want {
			t.Errorf("glob %q match %q = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
	}
}

func TestTemplates(t *testing.T) {
	doc, err := decodeDoc([]byte(`{"a":{"b":"x","n":12,"arr":[{"k":"first"}],"obj":{"z":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ev := &Event{Kind: KindS3, ID: "id-1", Source: "src", Doc: doc}
	for _, tc := range []struct {
		tmpl string
		want any
	}{
		{"${a.b}", "x"}, {"${a.n}", json.Number("12")}, {"n=${a.n}", "n=12"}, {"${a.arr.0.k}", "first"},
		{"${a.obj}", map[string]any{"z": true}}, {"o=${a.obj}", `o={"z":true}`}, {"$${a.b} ${@kind}:${@id}", "${a.b} s3:id-1"},
		{"plain", "plain"}, {"", ""},
	} {
		tm, err := compileTemplate(tc.tmpl)
		if err != nil {
			t.Fatalf("compileTemplate(%q) = %v", tc.tmpl, err)
		}
		got, err := tm.value(ev)
		if err != nil {
			t.Fatalf("template %q value = %v", tc.tmpl, err)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("template %q (-want +got):\n%s", tc.tmpl, d)
		}
	}
	for tmpl, want := range map[string]string{"${a.missing}": `no field "missing" in the event at a`,
		"${a.b.c}": "a.b is a string, not an object", "${a.arr.3}": "not an index of the 1-item array", "${@message}": "no such field"} {
		tm, err := compileTemplate(tmpl)
		if err != nil {
			t.Fatalf("compileTemplate(%q) = %v", tmpl, err)
		}
		if _, err := tm.value(ev); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("template %q value = %v, want an error saying %q", tmpl, err, want)
		}
	}
}

// Keys are at most 255 bytes: a long identity is replaced by its SHA-256.
func TestIdempotencyKeyHashesLongIdentities(t *testing.T) {
	short := &Event{Kind: KindSQS, ID: "m-1"}
	if got := IdempotencyKey("orders", short); got != "trigger/orders/sqs:m-1" {
		t.Errorf("IdempotencyKey(orders, m-1) = %q, want trigger/orders/sqs:m-1", got)
	}
	long := &Event{Kind: KindS3, ID: "bucket/seq/" + strings.Repeat("k", 300)}
	other := &Event{Kind: KindS3, ID: long.ID + "x"}
	got := IdempotencyKey(strings.Repeat("r", 63), long)
	if len(got) > 255 || !strings.Contains(got, ":sha256:") {
		t.Errorf("IdempotencyKey(long) = %q (%d bytes), want a sha256 key of at most 255 bytes", got, len(got))
	}
	if got == IdempotencyKey(strings.Repeat("r", 63), other) {
		t.Errorf("two long identities got the same key %q", got)
	}
	if a, b := IdempotencyKey("one", short), IdempotencyKey("two", short); a == b {
		t.Errorf("two rules got the same key %q for one event", a)
	}
}

func TestCloudEventIdentityIsUnambiguous(t *testing.T) {
	a, errA := NewCloudEventEvent(CloudEvent{ID: "b/c", Source: "a", Type: "t"})
	b, errB := NewCloudEventEvent(CloudEvent{ID: "c", Source: "a/b", Type: "t"})
	if errA != nil || errB != nil || a.ID == b.ID {
		t.Errorf("identities %q, %q (%v, %v): want two distinct identities", a.ID, b.ID, errA, errB)
	}
}

// CloudEvent data keeps its bytes: JSON as JSON, text as text, anything
// else as data_base64; JSON that does not parse is refused.
func TestCloudEventDataKeepsItsBytes(t *testing.T) {
	for _, tc := range []struct {
		ct, data, key string
		want          any
	}{
		{"application/json", `{"n":1}`, "data", map[string]any{"n": json.Number("1")}},
		{"application/cloudevents+json; charset=utf-8", `[true]`, "data", []any{true}},
		{"", `{"n":1}`, "data", map[string]any{"n": json.Number("1")}},
		{"", "plain words", "data", "plain words"},
		{"text/plain", `{"looks":"like json"}`, "data", `{"looks":"like json"}`},
		{"text/csv", "a,b\n\xff\xfe", "data_base64", "YSxiCv/+"},
		{"application/octet-stream", "PK\x03\x04", "data_base64", "UEsDBA=="},
		{"application/xml; charset=utf-8", "<a/>", "data", "<a/>"},
		{"not a media type;;", "\xff\x01", "data_base64", "/wE="},
	} {
		ev, err := NewCloudEventEvent(CloudEvent{ID: "1", Source: "s", Type: "t", DataContentType: tc.ct, Data: []byte(tc.data)})
		if err != nil {
			t.Fatalf("NewCloudEventEvent(%q, %q) = %v", tc.ct, tc.data, err)
		}
		doc := ev.Doc.(map[string]any)
		if d := cmp.Diff(tc.want, doc[tc.key]); d != "" {
			t.Errorf("NewCloudEventEvent(%q, %q) %s (-want +got):\n%s", tc.ct, tc.data, tc.key, d)
		}
	}
	if _, err := NewCloudEventEvent(CloudEvent{ID: "1", Source: "s", Type: "t", DataContentType: "application/json", Data: []byte("{nope")}); err == nil ||
		!strings.Contains(err.Error(), "not JSON") {
		t.Errorf("NewCloudEventEvent(invalid JSON data) = %v, want a refusal saying it is not JSON", err)
	}
}

// A Pub/Sub message's binary data leaves @message unreadable, naming where
// the base64 is; text data is @message.
func TestPubSubMessageData(t *testing.T) {
	msg := func(data string) CloudEvent {
		return CloudEvent{ID: "1", Source: "//pubsub.googleapis.com/projects/p/topics/t", Type: pubsubPublished,
			DataContentType: "application/json", Data: []byte(`{"message":{"data":"` + data + `"}}`)}
	}
	ev, err := NewCloudEventEvent(msg("/w=="))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.field("@message"); err == nil || !strings.Contains(err.Error(), "data.message.data") {
		t.Errorf("@message of binary data = %v, want an error naming data.message.data", err)
	}
	if ev, err = NewCloudEventEvent(msg("aGk=")); err != nil {
		t.Fatal(err)
	}
	if v, err := ev.field("@message"); v != "hi" || err != nil {
		t.Errorf("@message of %q = %v, %v; want hi", "aGk=", v, err)
	}
	if _, err := NewCloudEventEvent(msg("aGk")); err == nil {
		t.Errorf("NewCloudEventEvent(unpadded base64) = nil error, want a refusal")
	}
}
