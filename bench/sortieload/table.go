package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// restateName is the line name of Restate's load (bench/restate).
const restateName = "BenchmarkRestateSubmitToResult"

// modes names the lines of bench/run.sh, in table order.
var modes = []struct{ name, mode string }{
	{restateName, "Restate 1.7.12 (ingress HTTP call, the service over h2c)"},
	{"BenchmarkEmbeddedInProcessSubmitToResult", "embedded, in-process workers (host.New, InProcess)"},
	{"BenchmarkEmbeddedWarmSubmitToResult", "embedded, warm workers: the `sortie run` path (host.New defaults)"},
	{"BenchmarkServeInProcessSubmitToResult", "`sortie --in-process serve` + HTTP client"},
	{"BenchmarkServeWarmSubmitToResult", "`sortie serve` (warm workers, its default) + HTTP client"},
}

// result is the mean of a name's rounds.
type result struct {
	rounds             int
	runsPerS, p50, p99 float64
}

// printTable prints the Markdown table of the benchmark lines in path.
func printTable(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := readResults(f)
	if err != nil {
		return err
	}
	base, ok := res[restateName]
	if !ok {
		return fmt.Errorf("%s: no %s line", path, restateName)
	}
	fmt.Fprintln(w, "| mode | runs/s | p50 ms | p99 ms | runs/s vs Restate | p50 vs Restate |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, m := range modes {
		r, ok := res[m.name]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "| %s | %.0f | %.1f | %.1f | %.2f× | %.2f× |\n", m.mode, r.runsPerS, r.p50, r.p99,
			r.runsPerS/base.runsPerS, r.p50/base.p50)
	}
	fmt.Fprintf(w, "\n(mean of %d rounds each)\n", base.rounds)
	return nil
}

// readResults averages the metrics of each benchmark name's lines.
func readResults(r io.Reader) (map[string]*result, error) {
	out := map[string]*result{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		res := out[f[0]]
		if res == nil {
			res = &result{}
			out[f[0]] = res
		}
		res.rounds++
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: metric %q: %w", f[0], f[i], err)
			}
			switch f[i+1] {
			case "runs/s":
				res.runsPerS += (v - res.runsPerS) / float64(res.rounds)
			case "p50-ms":
				res.p50 += (v - res.p50) / float64(res.rounds)
			case "p99-ms":
				res.p99 += (v - res.p99) / float64(res.rounds)
			}
		}
	}
	return out, sc.Err()
}
