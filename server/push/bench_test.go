package push_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/push"
)

// BenchmarkDeliveries measures deliveries per second to a loopback
// receiver at the default concurrency (16): b.N runs with one
// configuration each are notified at once, and the clock stops when the
// receiver has answered all of them. The receiver does not verify.
func BenchmarkDeliveries(b *testing.B) {
	e := newEnv(b)
	var count atomic.Int64
	all := make(chan struct{})
	n := int64(b.N)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
		if count.Add(1) == n {
			close(all)
		}
	}))
	b.Cleanup(srv.Close)
	runs := make([]sortie.RunID, b.N)
	for i := range runs {
		runs[i] = e.submit(nil).ID
		e.put(runs[i], "hook", srv.URL+"/hook", "")
	}
	d, err := push.New(e.cp, e.cp, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: push.DefaultConcurrency}},
		e.keys, &push.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatalf("push.New = %v", err)
	}
	done := make(chan error, 1)
	b.ResetTimer()
	go func() { done <- d.Run(b.Context()) }()
	for _, id := range runs {
		d.Notify(id)
	}
	<-all
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
	if err := d.Close(); err != nil {
		b.Errorf("Close() = %v", err)
	}
	if err := <-done; err != nil {
		b.Errorf("Run() = %v after Close, want nil", err)
	}
}
