package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/server/httpengine"
	"github.com/sortie-run/sortie/wire"
)

// gated emits events once the gate opens, recording when each was emitted.
type gated struct {
	gate    chan struct{}
	events  int
	every   time.Duration
	mu      sync.Mutex
	emitted map[int64]time.Time // by seq
}

func (g *gated) handle(ctx context.Context, call *functions.Call) (any, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	tick := time.NewTicker(g.every) // the agent's pace
	defer tick.Stop()
	for i := 1; i <= g.events; i++ {
		g.mu.Lock()
		g.emitted[int64(i)] = time.Now()
		g.mu.Unlock()
		if err := call.Emit("tick", fmt.Sprint(i), nil); err != nil {
			return nil, err
		}
		<-tick.C
	}
	return map[string]int{"events": g.events}, nil
}

// BenchmarkFollowers1000 connects 1,000 SSE followers to one run, then the
// run emits 50 events 20 ms apart. It reports the memory each connected
// follower costs (heap and stacks of this process, which holds both the
// server and the clients, measured after GC while all are connected and
// idle) and the delivery latency from Emit in the worker to the event's
// arrival at a follower, p50 and p99 over all 50,000 deliveries.
func BenchmarkFollowers1000(b *testing.B) {
	const followers, events = 1000, 50
	for b.Loop() {
		g := &gated{gate: make(chan struct{}), events: events, every: 20 * time.Millisecond, emitted: map[int64]time.Time{}}
		r := newRig(b, nil, extraHandlers{"gated": g.handle})
		run, err := r.engine.Submit(context.Background(), &sortie.SubmitRequest{Agent: "gated"})
		if err != nil {
			b.Fatal(err)
		}
		tr := &http.Transport{MaxIdleConnsPerHost: followers}
		hc := &http.Client{Transport: tr}
		before := heap()
		lat, perFollower := followAll(b, hc, r.http.URL+"/v1/runs/"+run.ID.String()+"/events", followers, g, before)
		tr.CloseIdleConnections()
		slices.Sort(lat)
		if len(lat) != followers*events {
			b.Fatalf("%d deliveries, want %d", len(lat), followers*events)
		}
		b.ReportMetric(float64(perFollower), "B/follower")
		b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
		b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
		b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// followAll connects n followers, opens the gate once all are connected
// and returns every delivery latency and the memory per follower.
func followAll(b *testing.B, hc *http.Client, url string, n int, g *gated, before uint64) ([]time.Duration, uint64) {
	var connected, wg sync.WaitGroup
	connected.Add(n)
	wg.Add(n)
	var mu sync.Mutex
	var lat []time.Duration
	for range n {
		go func() {
			defer wg.Done()
			got, err := followOne(hc, url, &connected, g)
			if err != nil {
				b.Error(err)
			}
			mu.Lock()
			lat = append(lat, got...)
			mu.Unlock()
		}()
	}
	connected.Wait()
	per := (heap() - before) / uint64(n)
	close(g.gate)
	wg.Wait()
	return lat, per
}

func followOne(hc *http.Client, url string, connected *sync.WaitGroup, g *gated) ([]time.Duration, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		connected.Done()
		return nil, err
	}
	defer resp.Body.Close()
	connected.Done()
	var out []time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "event: run") {
			return out, nil
		}
		cur, ok := strings.CutPrefix(line, "id: ")
		if !ok {
			continue
		}
		now := time.Now()
		c, err := sortie.ParseCursor(cur)
		if err != nil {
			return out, err
		}
		g.mu.Lock()
		out = append(out, now.Sub(g.emitted[c.Seq]))
		g.mu.Unlock()
	}
	return out, fmt.Errorf("stream ended without the run: %v", sc.Err())
}

// BenchmarkHTTPSubmitToResult submits no-op probe runs over HTTP with
// unique idempotency keys, 32 in flight, and waits for each result with a
// long poll: the API's overhead on top of the embedded engine (SQLite,
// every change durable; in-process workers). Reports runs/s and the p50
// and p99 of submit → result.
func BenchmarkHTTPSubmitToResult(b *testing.B) {
	r := newRig(b, nil)
	const inFlight = 32
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: inFlight}}
	remote, err := httpengine.New(r.http.URL, &httpengine.Options{HTTPClient: hc})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var lat []time.Duration
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				if err := submitAndWait(hc, remote, r.http.URL, i); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
			}
		}()
	}
	for i := 0; b.Loop(); i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/time.Since(start).Seconds(), "runs/s")
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
}

func submitAndWait(hc *http.Client, remote *httpengine.Engine, base string, i int) error {
	run, err := remote.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe",
		Variables: []byte(`{"events": 0}`), IdempotencyKey: fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)})
	if err != nil {
		return err
	}
	after := ""
	for {
		resp, err := hc.Get(base + "/v1/runs/" + run.ID.String() + "/events?wait_ms=10000&after=" + after)
		if err != nil {
			return err
		}
		var page wire.EventsPage
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if page.Run != nil {
			if page.Run.State != sortie.StateCompleted {
				return fmt.Errorf("run %s ended %s", run.ID, page.Run.State)
			}
			return nil
		}
		after = page.NextCursor
	}
}
