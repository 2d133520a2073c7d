package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sortie-run/sortie"
)

// rssKiB reads a process's resident set size from /proc, in KiB.
func rssKiB(b *testing.B, pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkServeFollowerMemory: the resident memory a `sortie serve`
// process (its own process: server side only) gains per connected SSE
// follower, with 1,000 followers of one run.
func BenchmarkServeFollowerMemory(b *testing.B) {
	const followers = 1000
	for b.Loop() {
		c := &cli{state: b.TempDir()}
		url, cmd := launchServe(b, c, nil, "--in-process")
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/runs", strings.NewReader(`{"agent": "probe", "variables": {"events": 0, "sleep_ms": 600000}}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var run sortie.Run
		json.NewDecoder(resp.Body).Decode(&run)
		resp.Body.Close()
		before := rssKiB(b, cmd.Process.Pid)
		tr := &http.Transport{MaxIdleConnsPerHost: followers}
		ctx, cancel := context.WithCancel(context.Background())
		var connected sync.WaitGroup
		connected.Add(followers)
		for range followers {
			go func() {
				r, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/runs/"+run.ID.String()+"/events", nil)
				r.Header.Set("Accept", "text/event-stream")
				resp, err := (&http.Client{Transport: tr}).Do(r)
				if err != nil {
					connected.Done()
					return
				}
				sc := bufio.NewScanner(resp.Body)
				sc.Scan() // "retry: 1000": the server holds the stream
				connected.Done()
				for sc.Scan() {
				}
				resp.Body.Close()
			}()
		}
		connected.Wait()
		after := rssKiB(b, cmd.Process.Pid)
		b.ReportMetric(float64(after-before)*1024/followers, "B/follower")
		b.ReportMetric(float64(after)/1024, "serve-RSS-MiB")
		cancel()
		if err := stopServe(cmd); err != nil {
			b.Fatal(err)
		}
	}
}
