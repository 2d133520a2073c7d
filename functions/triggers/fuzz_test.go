package triggers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
)

// FuzzParseAWS: parsing any Lambda payload never panics; every record is
// an event, a rejection or an ignored notification, and every event (and
// every event unwrapped from it) has an identity and answers its
// pseudo-fields.
func FuzzParseAWS(f *testing.F) {
	for _, dir := range []string{"testdata/aws", "testdata/envelopes"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{"Records":[{"eventSource":"aws:sqs","messageId":"m","body":"{\"Type\":\"Notification\",\"MessageId\":\"x\",\"TopicArn\":\"t\",\"Message\":\"{\\\"Records\\\":[{\\\"eventSource\\\":\\\"aws:s3\\\"}]}\"}"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, recs, err := ParseAWS(b)
		if err != nil {
			return
		}
		for _, rec := range recs {
			checkRecord(t, rec)
		}
	})
}

func checkRecord(t *testing.T, rec Record) {
	switch {
	case rec.Err != nil, rec.Ignored != "":
		if rec.Event != nil {
			t.Fatalf("record %+v has an event and a rejection or ignore reason", rec)
		}
		return
	case rec.Event == nil || rec.Event.ID == "":
		t.Fatalf("record %+v has no event identity", rec)
	}
	for _, p := range []string{"@kind", "@id", "@subject", "@envelope.@id", "s3.object.urlDecodedKey"} {
		_, _ = rec.Event.field(p)
	}
	if strings.HasPrefix(rec.Event.ID, "/") {
		t.Fatalf("identity %q starts with a separator", rec.Event.ID)
	}
	for _, in := range rec.Event.inner {
		checkRecord(t, in)
	}
}

// FuzzCloudEventData: any data with any content type is kept without
// panicking; text/plain data that is UTF-8 is kept as the same string.
func FuzzCloudEventData(f *testing.F) {
	f.Add("application/json", []byte(`{"a":[1,2]}`))
	f.Add("text/plain; charset=utf-8", []byte("héllo"))
	f.Add("application/octet-stream", []byte{0, 0xff, 0xfe})
	f.Add("", []byte(`{"message":{"data":"aGk="}}`))
	f.Fuzz(func(t *testing.T, ct string, data []byte) {
		for _, typ := range []string{"t", pubsubPublished} {
			ev, err := NewCloudEventEvent(CloudEvent{ID: "1", Source: "s", Type: typ, DataContentType: ct, Data: data})
			if err != nil {
				continue
			}
			if s, ok := ev.Doc.(map[string]any)["data"].(string); ok && strings.HasPrefix(ct, "text/plain") && s != string(data) {
				t.Fatalf("text data %q kept as %q", data, s)
			}
			_, _ = ev.field("@message")
		}
	})
}

// FuzzXRayTraceParent: any header gives "" or a traceparent that
// round-trips through the W3C propagator.
func FuzzXRayTraceParent(f *testing.F) {
	f.Add("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	f.Add("Parent=;Root=1--;Sampled=?")
	f.Fuzz(func(t *testing.T, h string) {
		tp := XRayTraceParent(h)
		if tp == "" {
			return
		}
		if got, _ := sortie.TraceContextOf(sortie.ContextWithTrace(context.Background(), tp, "")); got != tp {
			t.Fatalf("XRayTraceParent(%q) = %q, which reads back as %q", h, tp, got)
		}
	})
}
