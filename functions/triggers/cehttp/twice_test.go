package cehttp_test

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// storageHeaders are the binary-mode sample's headers.
func storageHeaders(t *testing.T) http.Header {
	t.Helper()
	h := http.Header{}
	sc := bufio.NewScanner(bytes.NewReader(read(t, "cloudevents/storage-finalized.headers")))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		h.Set(k, v)
	}
	return h
}

// An envelope with a key twice, a ce-* header twice and an encoded body
// are refused naming the key or header, and start nothing: the SDK would
// keep the last "id" (a second run for a relay's one event) and the first
// ce-id.
func TestHandlerRefusesKeysAndHeadersTwiceAndEncodedBodies(t *testing.T) {
	srv, r := server(t, nil)
	sample := read(t, "cloudevents/pubsub-published.json")
	idTwice := bytes.Replace(sample, []byte(`"id": "2070443601311540",`), []byte(`"id": "2070443601311540", "id": "second",`), 1)
	if bytes.Equal(idTwice, sample) {
		t.Fatal("sample has no id to repeat")
	}
	structured := http.Header{"Content-Type": {"application/cloudevents+json"}}
	ceIDTwice := storageHeaders(t)
	ceIDTwice.Add("Ce-Id", "second")
	subjectTwice := storageHeaders(t)
	subjectTwice.Add("Ce-Subject", "objects/other")
	gzipped := http.Header{"Content-Type": {"application/cloudevents+json"}, "Content-Encoding": {"gzip"}}
	for _, tc := range []struct {
		name        string
		body        []byte
		h           http.Header
		code        int
		field, says string
	}{
		{"id twice", idTwice, structured, http.StatusBadRequest, "body", `duplicate object key "id"`},
		{"ce-id twice", read(t, "cloudevents/storage-finalized.json"), ceIDTwice, http.StatusBadRequest, "ce-id", "header ce-id given 2 times"},
		{"ce-subject twice", read(t, "cloudevents/storage-finalized.json"), subjectTwice, http.StatusBadRequest, "ce-subject", "header ce-subject given 2 times"},
		{"gzip", sample, gzipped, http.StatusUnsupportedMediaType, "Content-Encoding", `Content-Encoding "gzip" is not supported`},
	} {
		code, out := post(t, srv.URL, tc.body, tc.h)
		if code != tc.code || out.Error == nil || out.Error.Field != tc.field || !strings.Contains(out.Error.Message, tc.says) {
			t.Errorf("POST %s = %d %+v, want %d naming %s: %q", tc.name, code, out.Error, tc.code, tc.field, tc.says)
		}
	}
	if runs := r.Runs(t); len(runs) != 0 {
		t.Errorf("refused requests started %d runs, want none", len(runs))
	}
	if code, out := post(t, srv.URL, sample, structured); code != http.StatusOK || len(out.Outcomes) != 1 || out.Outcomes[0].RunID == "" {
		t.Errorf("POST the sample once = %d %+v, want 200 and a run", code, out)
	}
}
