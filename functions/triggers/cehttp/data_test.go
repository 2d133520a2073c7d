package cehttp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	sdkhttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/cehttp"
)

// send posts ev to url encoded by the official SDK (binary mode, or
// structured when structured is set) and returns the handler's answer.
func send(t *testing.T, url string, ev cloudevents.Event, structured bool) (int, cehttp.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if structured {
		ctx = binding.WithForceStructured(ctx)
	}
	if err := sdkhttp.WriteRequest(ctx, binding.ToMessage(&ev), req); err != nil {
		t.Fatalf("WriteRequest(%s) = %v", ev.ID(), err)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	return post(t, url, body, req.Header)
}

// A CloudEvent whose data is arbitrary bytes (application/octet-stream,
// not UTF-8) reaches the agent as data_base64 and decodes to the same
// bytes, in binary and structured mode.
func TestOctetStreamBytesRoundTrip(t *testing.T) {
	blob := []byte{0x00, 0xff, 0xfe, 'P', 'K', 0x03, 0x04, 0xc3, 0x28, 0x80, '\n', 0x7f}
	for _, structured := range []bool{false, true} {
		srv, r := server(t, nil)
		ev := cloudevents.NewEvent()
		ev.SetID("blob-1")
		ev.SetSource("//example.com/uploads")
		ev.SetType("com.example.blob.created")
		if err := ev.SetData("application/octet-stream", blob); err != nil {
			t.Fatal(err)
		}
		code, out := send(t, srv.URL, ev, structured)
		if code != http.StatusOK || len(out.Outcomes) != 1 || out.Outcomes[0].Rule != "blobs" {
			t.Fatalf("POST blob (structured %v) = %d %+v, want 200 and a run of rule blobs", structured, code, out)
		}
		run := r.Wait(t, out.Outcomes[0].RunID)
		var res struct{ Data string }
		if err := json.Unmarshal(run.Result, &res); err != nil {
			t.Fatalf("run result %s: %v", run.Result, err)
		}
		got, err := base64.StdEncoding.DecodeString(res.Data)
		if err != nil || !bytes.Equal(got, blob) {
			t.Errorf("structured %v: the agent got %q (%v), decoding to %x; want %x", structured, res.Data, err, got, blob)
		}
	}
}

// Text data stays text, byte for byte, even when it looks like JSON.
func TestTextDataStaysText(t *testing.T) {
	srv, r := server(t, nil)
	ev := cloudevents.NewEvent()
	ev.SetID("note-1")
	ev.SetSource("//example.com/notes")
	ev.SetType("com.example.note")
	const text = `{"not": "parsed"} — naïve ☃`
	if err := ev.SetData("text/plain; charset=utf-8", []byte(text)); err != nil {
		t.Fatal(err)
	}
	code, out := send(t, srv.URL, ev, false)
	if code != http.StatusOK || len(out.Outcomes) != 1 {
		t.Fatalf("POST note = %d %+v", code, out)
	}
	want, _ := json.Marshal(map[string]string{"data": text})
	checkRun(t, r, out.Outcomes[0], "notes", string(want))
}

// Pub/Sub message data that is not valid base64 is rejected: answered
// 200 (Pub/Sub stops redelivering), the rejection in the answer and the
// log, nothing started.
func TestInvalidPubSubBase64IsRejected(t *testing.T) {
	srv, r := server(t, nil)
	body := strings.Replace(string(read(t, "cloudevents/pubsub-published.json")), `"eyJvcmRlciI6IlAtNyJ9"`, `"eyJvcmRlciI6IlAtNyJ9!*"`, 1)
	code, out := post(t, srv.URL, []byte(body), http.Header{"Content-Type": {"application/cloudevents+json"}})
	if code != http.StatusOK || len(out.Outcomes) != 1 || out.Outcomes[0].Result != triggers.Rejected ||
		!strings.Contains(out.Outcomes[0].Reason, "data.message.data") {
		t.Fatalf("POST bad base64 = %d %+v, want 200 with one rejection naming data.message.data", code, out)
	}
	if runs := r.Runs(t); len(runs) != 0 {
		t.Errorf("a rejected event started %d runs, want none", len(runs))
	}
	if log := r.Log.String(); !strings.Contains(log, "event rejected") || !strings.Contains(log, "not valid base64") {
		t.Errorf("log lacks the rejection:\n%s", log)
	}
}

// A rule whose template reads a field the event lacks rejects the event
// for that rule: answered 200, nothing started.
func TestTemplateThatCannotReadTheEventRejects(t *testing.T) {
	srv, r := server(t, nil)
	noOrigin := bytes.Replace(read(t, "cloudevents/pubsub-published.json"), []byte(`"attributes": {"origin": "checkout"},`), nil, 1)
	code, out := post(t, srv.URL, noOrigin, http.Header{"Content-Type": {"application/cloudevents+json"}})
	if code != http.StatusOK || len(out.Outcomes) != 1 || out.Outcomes[0].Result != triggers.Rejected || out.Outcomes[0].Rule != "pubsub-orders" {
		t.Fatalf("POST = %d %+v, want 200 with rule pubsub-orders rejected", code, out)
	}
	if runs := r.Runs(t); len(runs) != 0 {
		t.Errorf("a rejected event started %d runs, want none", len(runs))
	}
}
