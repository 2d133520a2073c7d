package interop

import (
	"fmt"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func cursor(attempt, seq int) string { return fmt.Sprintf("%d.%d", attempt, seq) }

// scrape reads /metrics with the API token and parses it with the
// Prometheus text-format parser.
func (h *host) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d, want 200", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics (Prometheus text format): %v", err)
	}
	return fams
}

// sum adds the values of a counter family's samples, or the sample counts
// of a histogram family, whose labels hold want.
func sum(fam *dto.MetricFamily, want map[string]string) float64 {
	total := 0.0
	for _, m := range fam.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}

// checkMetrics scrapes the host after the clients ran at least runs runs:
// the engine's submissions and launches (one a retry, which the
// reconciler took up), the webhook deliveries (the receiver's refusals
// and its acceptances) and the HTTP server's requests are counted, and
// /metrics refuses a request without the token.
func (h *host) checkMetrics(t *testing.T, runs int) {
	resp, err := http.Get(h.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token = %d, want 401", resp.StatusCode)
	}
	fams := h.scrape(t)
	for _, c := range []struct {
		family string
		labels map[string]string
		min    float64
	}{
		{"sortie_runs_submitted_total", map[string]string{"sortie_agent": "probe"}, float64(runs)},
		{"sortie_runs_transitions_total", map[string]string{"sortie_agent": "probe", "sortie_state": "completed"}, 1},
		{"sortie_runs_transitions_total", map[string]string{"sortie_agent": "probe", "sortie_state": "cancelled"}, 1},
		{"sortie_launch_duration_seconds", map[string]string{"sortie_agent": "probe", "sortie_attempt_retry": "false"}, float64(runs)},
		{"sortie_launch_duration_seconds", map[string]string{"sortie_agent": "probe", "sortie_attempt_retry": "true"}, 1},
		{"sortie_reconciler_lag_seconds", map[string]string{"sortie_reconcile_kind": "due"}, 1},
		{"sortie_push_deliveries_total", map[string]string{"outcome": "delivered"}, 2},
		{"sortie_push_deliveries_total", map[string]string{"outcome": "failed"}, 2},
		{"http_server_request_duration_seconds", map[string]string{"http_route": "/a2a"}, 1},
	} {
		fam, ok := fams[c.family]
		if !ok {
			t.Errorf("/metrics has no family %s", c.family)
			continue
		}
		if got := sum(fam, c.labels); got < c.min {
			t.Errorf("%s%v = %v, want at least %v", c.family, c.labels, got, c.min)
		}
	}
}
