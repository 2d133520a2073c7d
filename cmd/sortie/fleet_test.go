package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/server/httpengine"
	"github.com/sortie-run/sortie/testrig/dynamodblocal"
)

// hooks is a webhook receiver counting each message ID (webhook-id).
type hooks struct {
	srv *httptest.Server
	mu  sync.Mutex
	ids map[string]int
}

func newHooks(t *testing.T) *hooks {
	h := &hooks{ids: map[string]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.ids[r.Header.Get("webhook-id")]++
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// fleet is three `sortie serve` processes on one DynamoDB table, each
// running its own warm local workers (which it claims and reports for),
// behind a proxy that fails 5% of the writes.
type fleet struct {
	proxy   *faultProxy
	hooks   *hooks
	engines []*httpengine.Engine
	clients []*sortie.Client
}

func startFleet(t *testing.T) *fleet {
	srv, err := dynamodblocal.Start(t.Context())
	if err != nil {
		t.Fatalf("start DynamoDB Local: %v", err)
	}
	t.Cleanup(srv.Stop)
	if err := dynamo.CreateTable(t.Context(), dynamodb.NewFromConfig(srv.Config()), "fleet"); err != nil {
		t.Fatalf("CreateTable = %v", err)
	}
	f := &fleet{proxy: newFaultProxy(t, srv.Endpoint, 0.05), hooks: newHooks(t)}
	c := &cli{t: t, state: t.TempDir()} // shared by the hosts: the keys every replica mounts
	for i := range 3 {
		url := startServeCmd(t, c, awsCredentials(), "--dynamodb-table", "fleet", "--dynamodb-endpoint", f.proxy.srv.URL,
			"--local-workers", "--ui=false", "--allow-destination", "127.0.0.1",
			"--allow-destination-addrs", "127.0.0.0/8", "--allow-http-destinations", "--log-level", "error")
		e, err := httpengine.New(url, nil)
		if err != nil {
			t.Fatalf("httpengine.New(host %d) = %v", i, err)
		}
		f.engines, f.clients = append(f.engines, e), append(f.clients, sortie.NewClient(e, nil))
	}
	return f
}

// fleetRuns is how many runs TestFleetOnOneTable submits: 150 in the
// suite, SORTIE_FLEET_RUNS (2000 for the load test) when set.
func fleetRuns(t *testing.T) int {
	n, err := strconv.Atoi(os.Getenv("SORTIE_FLEET_RUNS"))
	if err != nil || n <= 0 {
		return 150
	}
	return n
}

// Three hosts on one DynamoDB table, each with its own local workers,
// with 5% of the table's writes failing (before or after they apply):
// runs submitted round-robin with idempotency keys, one in ten submitted
// again on another host, every fourth with a push webhook. Every run
// ends once, completed, its duplicates answered with it; each attempt's
// events are 1..10 with no gap or repeat; each push message is delivered
// once; a list paged across the hosts holds every run once. It reports
// runs per second and the capacity per run DynamoDB reported.
func TestFleetOnOneTable(t *testing.T) {
	f := startFleet(t)
	n := fleetRuns(t)
	ids := make([]sortie.RunID, n)
	dups := map[int]sortie.RunID{}
	var mu sync.Mutex
	start := time.Now()
	parallelN(32, n, func(i int) {
		req := &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{"events":10}`), IdempotencyKey: fmt.Sprint("fleet-", i)}
		run, err := f.clients[i%3].Submit(t.Context(), req)
		if err != nil {
			t.Errorf("Submit #%d on host %d = %v", i, i%3, err)
			return
		}
		ids[i] = run.ID
		if i%4 == 0 {
			cfg := &sortie.PushConfig{RunID: run.ID, ID: "hook", URL: f.hooks.srv.URL + "/hook"}
			if _, err := f.engines[(i+2)%3].PutPushConfig(t.Context(), cfg); err != nil {
				t.Errorf("PutPushConfig(run #%d) = %v", i, err)
			}
		}
		if i%10 == 9 { // the same submission again, on another host
			again, err := f.clients[(i+1)%3].Submit(t.Context(), req)
			mu.Lock()
			if err == nil {
				dups[i] = again.ID
			}
			mu.Unlock()
		}
		if _, err := f.clients[(i+1)%3].Wait(t.Context(), run.ID); err != nil {
			t.Errorf("Wait(run #%d) = %v", i, err)
		}
	})
	elapsed := time.Since(start)
	read, write, lost, faults, calls := f.proxy.totals() // the runs' share, before the checks read them
	if t.Failed() {
		t.FailNow()
	}
	f.checkRuns(t, ids, dups)
	f.checkPushes(t, ids)
	f.checkPages(t, ids)
	per := func(v float64) float64 { return v / float64(n) }
	t.Logf("%d runs on 3 hosts in %v: %.1f runs/s; per run %.2f WRU and %.2f RRU reported by DynamoDB (+%.2f WRU of %d writes refused by their condition, billed unreported); faults injected %v",
		n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), per(write), per(read), per(float64(lost)), lost, faults)
	for _, op := range slices.Sorted(maps.Keys(calls)) {
		t.Logf("  %-20s %7d calls, %.2f per run", op, calls[op], per(float64(calls[op])))
	}
}

// parallelN calls fn(0..n-1) with at most width running at once.
func parallelN(width, n int, fn func(i int)) {
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// checkRuns: every run completed once (one result, its attempts ended
// once each), duplicates answered with the first run, each attempt's
// events numbered 1..10 once.
func (f *fleet) checkRuns(t *testing.T, ids []sortie.RunID, dups map[int]sortie.RunID) {
	for i, id := range dups {
		if id != ids[i] {
			t.Errorf("the duplicate of submission #%d got run %s, want %s", i, id, ids[i])
		}
	}
	parallelN(8, len(ids), func(i int) {
		run, err := f.clients[i%3].Get(t.Context(), ids[i])
		if err != nil || run.State != sortie.StateCompleted || len(run.Result) == 0 {
			t.Errorf("run #%d = %v, %v, want completed with a result", i, stateOfRun(run), err)
			return
		}
		evs, err := f.engines[(i+1)%3].Events(t.Context(), ids[i], sortie.Cursor{}, 1000)
		if err != nil {
			t.Errorf("Events(run #%d) = %v", i, err)
			return
		}
		for a := 1; a <= run.Attempt; a++ {
			var seqs []int64
			for _, e := range evs {
				if e.Attempt == a {
					seqs = append(seqs, e.Seq)
				}
			}
			if a == run.Attempt && len(seqs) != 10 {
				t.Errorf("run #%d attempt %d (the one that completed) has %d events %v, want 10", i, a, len(seqs), seqs)
			}
			for j, s := range seqs {
				if s != int64(j+1) {
					t.Errorf("run #%d attempt %d events %v, want 1.. with no gap or repeat", i, a, seqs)
					break
				}
			}
		}
	})
}

func stateOfRun(r *sortie.Run) string {
	if r == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s v%d attempt %d", r.State, r.Version, r.Attempt)
}

// checkPushes: every configuration delivered its run's terminal version
// and is done, and no message (run, configuration, version) arrived twice.
func (f *fleet) checkPushes(t *testing.T, ids []sortie.RunID) {
	for i := 0; i < len(ids); i += 4 {
		testwait.UntilReport(t, fmt.Sprintf("run #%d's webhook done", i), 60*time.Second, func() (bool, string) {
			cfg, err := f.engines[i%3].GetPushConfig(t.Context(), ids[i], "hook")
			if err != nil {
				return false, err.Error()
			}
			return cfg.Delivery.Done, fmt.Sprintf("%+v", cfg.Delivery)
		})
	}
	f.hooks.mu.Lock()
	defer f.hooks.mu.Unlock()
	for id, n := range f.hooks.ids {
		if n != 1 {
			t.Errorf("push message %s delivered %d times, want once", id, n)
		}
	}
	if len(f.hooks.ids) < (len(ids)+3)/4 {
		t.Errorf("%d push messages for %d configurations, want at least the terminal version of each", len(f.hooks.ids), (len(ids)+3)/4)
	}
}

// checkPages: a list paged across the three hosts, one page from each in
// turn, holds every run once.
func (f *fleet) checkPages(t *testing.T, ids []sortie.RunID) {
	seen := map[sortie.RunID]int{}
	q := sortie.ListQuery{PageSize: 97}
	for page := 0; ; page++ {
		p, err := f.clients[page%3].List(t.Context(), q)
		if err != nil {
			t.Fatalf("List(page %d) on host %d = %v", page+1, page%3, err)
		}
		for _, r := range p.Runs {
			seen[r.ID]++
		}
		if q.PageToken = p.NextPageToken; q.PageToken == "" {
			break
		}
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("run %s listed %d times across the hosts' pages, want once", id, seen[id])
		}
	}
	if len(seen) != len(ids) {
		t.Errorf("the pages list %d runs, want the %d submitted", len(seen), len(ids))
	}
}
