package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	sdkhttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/cehttp"
)

// postEvent posts body with header h to the host's CloudEvents route
// with token (none when empty) and returns the status and answer.
func postEvent(t *testing.T, url, token string, body []byte, h http.Header) (int, cehttp.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/events", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/events: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out cehttp.Response
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

// binaryMode encodes a structured-mode event file as the official SDK
// writes binary mode (ce-* headers, the data as the body).
func binaryMode(t *testing.T, path string) ([]byte, http.Header) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	var ev event.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://unused", nil)
	if err := sdkhttp.WriteRequest(context.Background(), binding.ToMessage(&ev), req); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(req.Body)
	return body, req.Header
}

// eventsToken is the API token of the hosts serveEvents starts.
const eventsToken = "cloudevents-test-token-0123456789"

// serveEvents starts `sortie serve` with the example trigger rules and
// API token eventsToken, and reads the example Pub/Sub event.
func serveEvents(t *testing.T) (c *cli, url string, pubsub []byte) {
	t.Helper()
	c = newCLI(t)
	url, _ = startServe(t, c, []string{"SORTIE_API_TOKENS=" + eventsToken}, "--trigger-rules", exampleRules)
	pubsub, err := os.ReadFile(filepath.Join("..", "..", exampleEvents, "pubsub-message-published.json"))
	if err != nil {
		t.Fatal(err)
	}
	return c, url, pubsub
}

// `sortie serve --trigger-rules` takes CloudEvents on the API's
// authentication: without a valid token nothing starts; the same
// (source, id) delivered twice, in structured and binary mode, starts one
// run, which completes with the variables its rule templates.
func TestServeTakesCloudEvents(t *testing.T) {
	c, url, pubsub := serveEvents(t)
	structured := http.Header{"Content-Type": {"application/cloudevents+json"}}
	for _, tok := range []string{"", "not-the-token-0123456789"} {
		if code, _ := postEvent(t, url, tok, pubsub, structured); code != http.StatusUnauthorized {
			t.Errorf("POST /v1/events with token %q = %d, want 401", tok, code)
		}
	}
	if n := c.runCount(); n != 0 {
		t.Fatalf("refused deliveries started %d runs, want none", n)
	}

	code, first := postEvent(t, url, eventsToken, pubsub, structured)
	if code != http.StatusOK || len(first.Outcomes) != 1 || first.Outcomes[0].Result != triggers.Started {
		t.Fatalf("POST pubsub event = %d %+v, want 200 and one started run", code, first)
	}
	body, h := binaryMode(t, exampleEvents+"pubsub-message-published.json")
	if ct := h.Get("ce-id"); ct != "2070443601311540" {
		t.Fatalf("the SDK's binary mode wrote ce-id %q", ct)
	}
	code, again := postEvent(t, url, eventsToken, body, h)
	if code != http.StatusOK || len(again.Outcomes) != 1 || again.Outcomes[0].Result != triggers.Existed || again.Outcomes[0].RunID != first.Outcomes[0].RunID {
		t.Fatalf("POST the same event in binary mode = %d %+v, want 200 and run %s existed", code, again, first.Outcomes[0].RunID)
	}
	if n := c.runCount(); n != 1 {
		t.Errorf("two deliveries of one (source, id) started %d runs, want 1", n)
	}
	c.result(first.Outcomes[0].RunID, `{"message":{"order":"P-7"},"origin":"checkout"}`)

	batch := append(append([]byte("["), pubsub...), ']')
	if code, out := postEvent(t, url, eventsToken, batch, http.Header{"Content-Type": {"application/cloudevents-batch+json"}}); code != http.StatusUnsupportedMediaType ||
		out.Error == nil || out.Error.Code != "invalid_argument" || !strings.Contains(out.Error.Message, "one event per request") {
		t.Errorf("POST a batch = %d %+v, want 415 saying one event per request", code, out)
	}
}

// A --trigger-rules file that is not valid stops serve before it listens,
// naming the rule; without the flag the route does not exist.
func TestServeTriggerRulesChecked(t *testing.T) {
	c := newCLI(t)
	bad := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(bad, []byte(`{"version":"sortie.triggers/v1","rules":[{"name":"x","match":{},"agent":"probe"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := c.run("serve", "--listen", "127.0.0.1:0", "--trigger-rules", bad)
	if r.code != 2 || !strings.Contains(r.stderr, `rules[0].match: rule "x"`) || strings.Contains(r.stderr, "listening") {
		t.Errorf("serve --trigger-rules (invalid): exit %d, stderr %q; want exit 2 naming rules[0].match before listening", r.code, r.stderr)
	}
	url, _ := startServe(t, c, nil)
	if code, _ := postEvent(t, url, "", []byte(`{}`), http.Header{"Content-Type": {"application/cloudevents+json"}}); code != http.StatusNotFound {
		t.Errorf("POST /v1/events on a host without --trigger-rules = %d, want 404", code)
	}
}

// A host refuses, naming the key or header, a structured event whose
// envelope has "id" twice (the SDK kept the second: a relay's one event
// would be two runs), a ce-id header twice (the SDK kept the first), a
// Content-Type twice and a gzipped body (415); nothing starts.
func TestServeRefusesCloudEventsGivenTwice(t *testing.T) {
	c, url, pubsub := serveEvents(t)
	idTwice := bytes.Replace(pubsub, []byte(`"id": "2070443601311540",`), []byte(`"id": "2070443601311540", "id": "another",`), 1)
	if bytes.Equal(idTwice, pubsub) {
		t.Fatal("the example has no id to repeat")
	}
	binBody, ceIDTwice := binaryMode(t, exampleEvents+"pubsub-message-published.json")
	ceIDTwice.Add("ce-id", "another")
	for _, tc := range []struct {
		name        string
		body        []byte
		h           http.Header
		code        int
		field, says string
	}{
		{"id twice", idTwice, http.Header{"Content-Type": {"application/cloudevents+json"}}, 400, "body", `duplicate object key "id"`},
		{"ce-id twice", binBody, ceIDTwice, 400, "ce-id", "given 2 times"},
		{"Content-Type twice", pubsub, http.Header{"Content-Type": {"application/cloudevents+json", "application/json"}}, 400, "Content-Type", "given 2 times"},
		{"gzip", pubsub, http.Header{"Content-Type": {"application/cloudevents+json"}, "Content-Encoding": {"gzip"}}, 415, "Content-Encoding", "not supported"},
	} {
		code, out := postEvent(t, url, eventsToken, tc.body, tc.h)
		if code != tc.code || out.Error == nil || out.Error.Field != tc.field || !strings.Contains(out.Error.Message, tc.says) {
			t.Errorf("POST /v1/events %s = %d %+v, want %d naming %s: %q", tc.name, code, out.Error, tc.code, tc.field, tc.says)
		}
	}
	if n := c.runCount(); n != 0 {
		t.Errorf("refused deliveries started %d runs, want none", n)
	}
}
