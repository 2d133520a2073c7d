package cloudrun

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
)

// Defaults of [EnvMemory] and [EnvCPU]: Cloud Run's own defaults for a
// container that sets no limits.
const (
	DefaultMemory = "512Mi"
	DefaultCPU    = "1"
)

// billingQuantumMs is Cloud Run's billing granularity: billed time is
// rounded up to the nearest 100 ms ("Cloud Run pricing").
const billingQuantumMs = 100

// parseMemory reads a Kubernetes-style memory quantity as Cloud Run takes
// it ("512Mi", "1Gi", "2G") and returns MiB, rounded up.
func parseMemory(s string) (int64, bool) {
	units := []struct {
		suffix string
		bytes  int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil || v <= 0 || v > 1<<40/u.bytes {
				return 0, false
			}
			return (v*u.bytes + 1<<20 - 1) >> 20, true
		}
	}
	return 0, false
}

// parseCPU reads a CPU quantity ("1", "2", "0.5", "1000m") in vCPUs.
func parseCPU(s string) (float64, bool) {
	if m, ok := strings.CutSuffix(s, "m"); ok {
		v, err := strconv.ParseInt(m, 10, 64)
		return float64(v) / 1000, err == nil && v > 0 && v <= 64_000
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil && v > 0 && v <= 64
}

// Size is a container's memory and CPU limits, recorded on each attempt's
// usage so its cost can be computed.
type Size struct {
	// MemoryMiB is the memory limit in MiB.
	MemoryMiB int64
	// VCPU is the CPU limit in vCPUs.
	VCPU float64
}

// defaultSize is Cloud Run's default container size.
var defaultSize = Size{MemoryMiB: 512, VCPU: 1}

// loadCompute reads the container's size.
func (e *Env) loadCompute(getenv func(string) string) error {
	mem, cpu := getenv(EnvMemory), getenv(EnvCPU)
	if mem == "" {
		mem = DefaultMemory
	}
	if cpu == "" {
		cpu = DefaultCPU
	}
	var ok bool
	if e.Size.MemoryMiB, ok = parseMemory(mem); !ok {
		return sortie.Invalidf(EnvMemory, "%.40q is not a memory size such as 512Mi or 2Gi", mem)
	}
	if e.Size.VCPU, ok = parseCPU(cpu); !ok {
		return sortie.Invalidf(EnvCPU, "%.40q is not a CPU count such as 1, 0.5 or 1000m", cpu)
	}
	return nil
}

// meteredReporter states the container's compute shape when it claims
// (so a budget prices the live attempt) and adds the container's usage
// to the outcome it finishes with: its size, how Cloud Run bills it (job,
// or instance-based for a service, whose attempts run after the response)
// and the time since began rounded up to 100 ms.
type meteredReporter struct {
	functions.Reporter
	began     time.Time
	size      Size
	billing   string // "job" or "instance"
	finishing bool
}

func meter(rep functions.Reporter, began time.Time, size Size, billing string) *meteredReporter {
	if size == (Size{}) {
		size = defaultSize
	}
	r := &meteredReporter{began: began, size: size, billing: billing}
	r.Reporter = functions.WithClaimShape(rep, r.shape())
	return r
}

// shape is the container's compute shape: memory in MiB, vCPUs and
// billing.
func (r *meteredReporter) shape() *sortie.Usage {
	return &sortie.Usage{MemoryMB: r.size.MemoryMiB, VCPU: r.size.VCPU, Billing: r.billing}
}

func (r *meteredReporter) Finish(ctx context.Context, o sortie.Outcome) error {
	r.finishing = true
	q := int64(billingQuantumMs * time.Millisecond)
	ms := (int64(time.Since(r.began)) + q - 1) / q * billingQuantumMs
	o.Usage = o.Usage.Plus(&sortie.Usage{BilledDurationMs: ms}).Plus(r.shape())
	return r.Reporter.Finish(ctx, o)
}
