package cehttp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/cehttp"
	"github.com/sortie-run/sortie/functions/triggers/internal/rig"
)

const testdata = "../testdata"

// server serves NewHandler over the shared test rules on a real engine.
func server(t *testing.T, opts *cehttp.Options) (*httptest.Server, *rig.Rig) {
	t.Helper()
	rules, err := triggers.LoadRules(filepath.Join(testdata, "rules.json"))
	if err != nil {
		t.Fatalf("LoadRules = %v", err)
	}
	r := rig.New(t)
	srv := httptest.NewServer(cehttp.NewHandler(triggers.NewRouter(rules, r.Engine, &triggers.Options{Logger: r.Logger()}), opts))
	t.Cleanup(srv.Close)
	return srv, r
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// structured posts the Pub/Sub sample in structured mode.
func structured(t *testing.T, url string) (int, cehttp.Response) {
	t.Helper()
	return post(t, url, read(t, "cloudevents/pubsub-published.json"), http.Header{"Content-Type": {"application/cloudevents+json"}})
}

// binary posts the Cloud Storage sample in binary mode, headers from its
// .headers file.
func binary(t *testing.T, url string) (int, cehttp.Response) {
	t.Helper()
	return post(t, url, read(t, "cloudevents/storage-finalized.json"), storageHeaders(t))
}

func post(t *testing.T, url string, body []byte, h http.Header) (int, cehttp.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s = %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out cehttp.Response
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("POST %s answered %d %q: %v", url, resp.StatusCode, b, err)
	}
	return resp.StatusCode, out
}

func checkRun(t *testing.T, r *rig.Rig, o triggers.Outcome, rule, result string) {
	t.Helper()
	if o.Rule != rule || o.RunID == "" {
		t.Fatalf("outcome = %+v, want a run of rule %s", o, rule)
	}
	run := r.Wait(t, o.RunID)
	var got, want any
	_ = json.Unmarshal(run.Result, &got)
	_ = json.Unmarshal([]byte(result), &want)
	if run.State != sortie.StateCompleted || cmp.Diff(want, got) != "" {
		t.Errorf("run %s = %s %s, want completed with %s", run.ID, run.State, run.Result, result)
	}
}

// Structured mode (Pub/Sub message) and binary mode (Cloud Storage object)
// each start the run their rule names; delivered twice, one run.
func TestCloudEventsStartOneRunPerEvent(t *testing.T) {
	for _, tc := range []struct {
		name, rule, result string
		send               func(*testing.T, string) (int, cehttp.Response)
	}{
		{"structured pubsub", "pubsub-orders", `{"message":{"order":"P-7"},"origin":"checkout"}`, structured},
		{"binary storage", "gcs-uploads", `{"bucket":"sample-bucket","name":"uploads/report.csv","generation":"1680118189357421","subject":"objects/uploads/report.csv"}`, binary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, r := server(t, nil)
			code, first := tc.send(t, srv.URL)
			if code != http.StatusOK || len(first.Outcomes) != 1 {
				t.Fatalf("POST = %d %+v, want 200 with one outcome", code, first)
			}
			checkRun(t, r, first.Outcomes[0], tc.rule, tc.result)
			code, again := tc.send(t, srv.URL)
			if code != http.StatusOK || len(again.Outcomes) != 1 || again.Outcomes[0].Result != triggers.Existed || again.Outcomes[0].RunID != first.Outcomes[0].RunID {
				t.Errorf("POST again = %d %+v, want 200 and run %s existed", code, again, first.Outcomes[0].RunID)
			}
			if runs := r.Runs(t); len(runs) != 1 {
				t.Errorf("two deliveries started %d runs, want 1", len(runs))
			}
		})
	}
}

func TestUnmatchedCloudEventIsAcceptedAndStartsNothing(t *testing.T) {
	srv, r := server(t, nil)
	body := bytes.Replace(read(t, "cloudevents/pubsub-published.json"), []byte("topics/orders"), []byte("topics/audit"), 1)
	code, out := post(t, srv.URL, body, http.Header{"Content-Type": {"application/cloudevents+json"}})
	if code != http.StatusOK || len(out.Outcomes) != 1 || out.Outcomes[0].Result != triggers.Unmatched || out.Outcomes[0].Reason == "" {
		t.Fatalf("POST unmatched = %d %+v, want 200 and an unmatched outcome", code, out)
	}
	if runs := r.Runs(t); len(runs) != 0 {
		t.Errorf("an unmatched event started %d runs, want none", len(runs))
	}
	if log := r.Log.String(); !strings.Contains(log, "no rule matched") || !strings.Contains(log, "pubsub-orders: source") {
		t.Errorf("log does not say why nothing matched:\n%s", log)
	}
}

func TestHandlerRefusesBadRequests(t *testing.T) {
	srv, r := server(t, &cehttp.Options{MaxBodyBytes: 4096})
	for _, tc := range []struct {
		name string
		body []byte
		h    http.Header
		want int
	}{
		{"plain JSON", []byte(`{"a":1}`), http.Header{"Content-Type": {"application/json"}}, http.StatusBadRequest},
		{"no id", []byte(`{"specversion":"1.0","source":"s","type":"t"}`), http.Header{"Content-Type": {"application/cloudevents+json"}}, http.StatusBadRequest},
		{"batch", []byte(`[` + string(read(t, "cloudevents/pubsub-published.json")) + `]`), http.Header{"Content-Type": {"application/cloudevents-batch+json"}}, http.StatusUnsupportedMediaType},
		{"too large", append(read(t, "cloudevents/pubsub-published.json"), bytes.Repeat([]byte(" "), 5000)...), http.Header{"Content-Type": {"application/cloudevents+json"}}, http.StatusRequestEntityTooLarge},
	} {
		if code, out := post(t, srv.URL, tc.body, tc.h); code != tc.want || out.Error == nil || out.Error.Code == "" || out.Error.Message == "" {
			t.Errorf("POST %s = %d %+v, want %d with an error", tc.name, code, out, tc.want)
		}
	}
	resp, err := http.Get(srv.URL)
	if err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET = %v, %v; want 405", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	if runs := r.Runs(t); len(runs) != 0 {
		t.Errorf("refused requests started %d runs, want none", len(runs))
	}
}

func TestParseJSONReadsStructuredEvents(t *testing.T) {
	ce, err := cehttp.ParseJSON(read(t, "cloudevents/pubsub-published.json"))
	if err != nil || ce.ID != "2070443601311540" || ce.Type != "google.cloud.pubsub.topic.v1.messagePublished" || ce.Time == "" {
		t.Errorf("ParseJSON(pubsub sample) = %+v, %v; want its id, type and time", ce, err)
	}
	if _, err := cehttp.ParseJSON([]byte(`{"specversion":"1.0","id":"1"}`)); err == nil {
		t.Errorf("ParseJSON(no source, no type) = nil error, want a refusal")
	}
	twice := `{"specversion":"1.0","id":"1","source":"s","type":"a","type":"b"}`
	if _, err := cehttp.ParseJSON([]byte(twice)); err == nil || !strings.Contains(err.Error(), `duplicate object key "type"`) {
		t.Errorf("ParseJSON(type twice) = %v, want a duplicate key refusal", err)
	}
}
