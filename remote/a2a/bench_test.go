package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/remote"
	ra2a "github.com/sortie-run/sortie/remote/a2a"
	"github.com/sortie-run/sortie/remote/remotetest"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

// BenchmarkA2ASendToResult: blocking A2A SendMessage calls (a2a-go
// client → server/a2a on loopback → a run on SQLite with every change
// durable, in-process workers), 16 in flight, each a new task with a
// unique message ID. Reports tasks/s and the p50 and p99 of send → result.
func BenchmarkA2ASendToResult(b *testing.B) {
	host, err := remotetest.Start(&remotetest.Options{SQLitePath: filepath.Join(b.TempDir(), "sortie.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer host.Close()
	h, err := a2aserver.New(host.Engine, []sortie.Manifest{host.Agents["probe"]}, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tr := ra2a.New(&ra2a.Options{Destinations: destination.LoopbackHTTP()})
	defer tr.Close()
	const inFlight = 16
	next := make(chan int)
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				_, err := tr.Send(context.Background(), &remote.CallRequest{AgentURL: srv.URL, Skill: "probe",
					Message: remote.Message{ID: fmt.Sprintf("m-%d-%d", start.UnixNano(), i), Data: json.RawMessage(`{"events":0}`)}})
				if err != nil {
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
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/time.Since(start).Seconds(), "tasks/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
