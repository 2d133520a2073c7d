package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/server/httpengine"
)

type config struct {
	name, stateDir, worker, url, prefix, table string
	cpuProfile                                 string
	inProcess, serve                           bool
	n, inFlight, warmup, events                int
	timeout                                    time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.name, "name", "Sortie", "benchmark name: the line is Benchmark<name>SubmitToResult")
	flag.StringVar(&cfg.stateDir, "state-dir", "", "embedded: the host's state directory (a fresh one)")
	flag.StringVar(&cfg.worker, "worker", "", "embedded: the sortie binary whose `worker --session` are the warm workers")
	flag.BoolVar(&cfg.inProcess, "in-process", false, "embedded: run attempts in this process")
	flag.StringVar(&cfg.url, "url", "", "a sortie serve's base URL (loopback) instead of the embedded host")
	flag.BoolVar(&cfg.serve, "serve", false, "serve the embedded host's API on loopback in this process and drive it over HTTP (to profile the server side with -cpuprofile; bench/run.sh runs sortie serve)")
	flag.StringVar(&cfg.prefix, "key-prefix", fmt.Sprintf("bench-%d", time.Now().UnixNano()), "idempotency key prefix; keys are <prefix>-<i>")
	flag.IntVar(&cfg.n, "n", 2000, "measured runs")
	flag.IntVar(&cfg.inFlight, "c", 32, "runs in flight")
	flag.IntVar(&cfg.warmup, "warmup", 64, "unmeasured runs first")
	flag.IntVar(&cfg.events, "events", 0, "events each run emits (the probe's events variable); with events the line also has events/s")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "deadline for the whole command")
	flag.StringVar(&cfg.table, "table", "", "print the table of the benchmark lines in this file and exit")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured runs to this file")
	flag.Parse()
	var err error
	if cfg.table != "" {
		err = printTable(os.Stdout, cfg.table)
	} else {
		err = run(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortieload:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	client, closeFn, err := open(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeFn()
	if _, _, err := drive(ctx, client, cfg, cfg.prefix+"-warm", cfg.warmup); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	stop, err := startProfile(cfg.cpuProfile)
	if err != nil {
		return err
	}
	lat, elapsed, err := drive(ctx, client, cfg, cfg.prefix, cfg.n)
	stop()
	if err != nil {
		return err
	}
	slices.Sort(lat)
	fmt.Printf("Benchmark%sSubmitToResult\t%d\t%d ns/op\t%.2f runs/s\t%.3f p50-ms\t%.3f p99-ms", cfg.name,
		cfg.n, elapsed.Nanoseconds()/int64(cfg.n), float64(cfg.n)/elapsed.Seconds(), ms(lat[cfg.n/2]), ms(lat[cfg.n*99/100]))
	if cfg.events > 0 {
		fmt.Printf("\t%.0f events/s", float64(cfg.n*cfg.events)/elapsed.Seconds())
	}
	fmt.Println()
	return nil
}

// open returns the client of the path cfg names and what closes it.
func open(ctx context.Context, cfg config) (*sortie.Client, func(), error) {
	if cfg.url != "" {
		return remote(ctx, cfg)
	}
	hc := host.Config{StateDir: cfg.stateDir, InProcess: cfg.inProcess, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if !cfg.inProcess {
		hc.WorkerCommand = []string{cfg.worker, "worker"}
	}
	if cfg.serve {
		hc.API = &host.API{}
	}
	h, err := host.New(ctx, hc)
	if err != nil {
		return nil, nil, err
	}
	rctx, stop := context.WithCancel(ctx)
	if !cfg.serve {
		go h.RunReconciler(rctx) // as every long-lived sortie command does
		return h.Client(), func() { stop(); h.Close() }, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stop()
		h.Close()
		return nil, nil, err
	}
	go h.Serve(rctx, ln)
	cfg.url = "http://" + ln.Addr().String()
	c, closeRemote, err := remote(ctx, cfg)
	return c, func() { closeRemote(); stop(); h.Close() }, err
}

// remote returns a client of the sortie serve at cfg.url, once it answers.
func remote(ctx context.Context, cfg config) (*sortie.Client, func(), error) {
	tr := &http.Transport{MaxIdleConnsPerHost: cfg.inFlight, Proxy: nil}
	hc := &http.Client{Transport: tr}
	if err := awaitHealthy(ctx, hc, cfg.url+"/healthz"); err != nil {
		return nil, nil, err
	}
	e, err := httpengine.New(cfg.url, &httpengine.Options{HTTPClient: hc})
	if err != nil {
		return nil, nil, err
	}
	return sortie.NewClient(e, nil), tr.CloseIdleConnections, nil
}

func awaitHealthy(ctx context.Context, hc *http.Client, url string) error {
	for {
		resp, err := hc.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer: %w", url, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// drive makes n runs with keys <prefix>-<i>, cfg.inFlight at a time, and
// returns each one's submit→result latency and the wall time of all.
func drive(ctx context.Context, c *sortie.Client, cfg config, prefix string, n int) ([]time.Duration, time.Duration, error) {
	vars := json.RawMessage(fmt.Sprintf(`{"events":%d}`, cfg.events))
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	start := time.Now()
	for range cfg.inFlight {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				t0 := time.Now()
				if err := submitAndWait(ctx, c, fmt.Sprintf("%s-%d", prefix, i), vars); err != nil {
					once.Do(func() { first = err })
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	return lat, time.Since(start), first
}

// submitAndWait submits one probe run with vars and waits for it.
func submitAndWait(ctx context.Context, c *sortie.Client, key string, vars json.RawMessage) error {
	run, err := c.Submit(ctx, &sortie.SubmitRequest{Agent: "probe", IdempotencyKey: key, Variables: vars})
	if err != nil {
		return err
	}
	if run, err = c.Wait(ctx, run.ID); err != nil {
		return err
	}
	if run.State != sortie.StateCompleted {
		return fmt.Errorf("run %s ended %s: %s", run.ID, run.State, run.Reason)
	}
	return nil
}

// startProfile starts a CPU profile into path ("" for none) and returns
// what stops it.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
