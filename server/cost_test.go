package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

// The API shows each run's cost as the engine prices it: GET of one run,
// the list, and the final run of an event page.
func TestAPIShowsTheCost(t *testing.T) {
	r := newRig(t, nil)
	run := r.submit(t, `{"sleep_ms":5,"output":1}`)
	final := r.final(t, run.ID)
	if final.Cost == nil || final.Cost.TotalNanoUSD < 5_000_000 || final.Cost.PriceVersion != "2026-12-02+set" {
		t.Fatalf("engine run cost = %+v, want ≥ 5 ms × $1/s = 5,000,000 n$ priced 2026-12-02+set", final.Cost)
	}
	got, err := r.client.Get(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(final.Cost, got.Cost); d != "" {
		t.Errorf("GET /v1/runs/%s cost (-engine +api):\n%s", run.ID, d)
	}
	page, err := r.client.List(context.Background(), sortie.ListQuery{})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].Cost == nil || page.Runs[0].Cost.TotalNanoUSD != final.Cost.TotalNanoUSD {
		t.Errorf("GET /v1/runs = %+v, %v; want the run with its cost %d", page, err, final.Cost.TotalNanoUSD)
	}
	resp, err := http.Get(r.http.URL + "/v1/runs/" + string(run.ID) + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var evs struct {
		Run struct {
			Cost struct {
				Total int64 `json:"total_nano_usd"`
			} `json:"cost"`
		} `json:"run"`
	}
	if err := json.Unmarshal(b, &evs); err != nil || evs.Run.Cost.Total != int64(final.Cost.TotalNanoUSD) {
		t.Errorf("GET /v1/runs/%s/events run cost = %d (%v), want %d:\n%s", run.ID, evs.Run.Cost.Total, err, final.Cost.TotalNanoUSD, b)
	}
}
