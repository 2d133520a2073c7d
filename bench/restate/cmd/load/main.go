package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

type config struct {
	ingress, admin, deployment, prefix string
	n, inFlight, warmup                int
	timeout                            time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.ingress, "ingress", "http://127.0.0.1:8080", "Restate ingress base URL (loopback)")
	flag.StringVar(&cfg.admin, "admin", "", "Restate admin base URL (loopback); with -deployment, register it first")
	flag.StringVar(&cfg.deployment, "deployment", "", "service endpoint URL to register (loopback); optional")
	flag.StringVar(&cfg.prefix, "key-prefix", fmt.Sprintf("bench-%d", time.Now().UnixNano()), "idempotency key prefix; keys are <prefix>-<i>")
	flag.IntVar(&cfg.n, "n", 2000, "measured invocations (1..1000000)")
	flag.IntVar(&cfg.inFlight, "c", 32, "invocations in flight (1..1024)")
	flag.IntVar(&cfg.warmup, "warmup", 64, "unmeasured invocations first, with their own keys (0..100000)")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "deadline for the whole command")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	c := newClient(cfg.inFlight)
	if cfg.deployment != "" {
		if err := c.register(ctx, cfg.admin, cfg.deployment); err != nil {
			return err
		}
	}
	if err := c.awaitReady(ctx, cfg.ingress, cfg.prefix+"-ready"); err != nil {
		return err
	}
	if _, _, err := drive(ctx, c, cfg.ingress, cfg.prefix+"-warm", cfg.warmup, cfg.inFlight); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	lat, elapsed, err := drive(ctx, c, cfg.ingress, cfg.prefix, cfg.n, cfg.inFlight)
	if err != nil {
		return err
	}
	slices.Sort(lat)
	fmt.Printf("BenchmarkRestateSubmitToResult\t%d\t%d ns/op\t%.2f runs/s\t%.3f p50-ms\t%.3f p99-ms\n",
		cfg.n, elapsed.Nanoseconds()/int64(cfg.n), float64(cfg.n)/elapsed.Seconds(),
		ms(lat[cfg.n/2]), ms(lat[cfg.n*99/100]))
	return nil
}

// drive makes n invocations with keys <prefix>-<i>, inFlight at a time, and
// returns each one's submit→result latency and the wall time of all of them.
func drive(ctx context.Context, c *client, ingress, prefix string, n, inFlight int) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	start := time.Now()
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				t0 := time.Now()
				if err := c.invoke(ctx, ingress, fmt.Sprintf("%s-%d", prefix, i)); err != nil {
					once.Do(func() { first = err })
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	return lat, time.Since(start), first
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
