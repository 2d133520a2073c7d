package sortie

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
)

// NanoUSD is an amount of money in nano-dollars (10⁻⁹ US dollars), an exact
// integer. A run costs a few micro-dollars, so micro-dollars would round
// each component by up to half its value; nano-dollars keep every
// component within 0.5 n$ of the exact figure and still sum to about
// $9.2 billion in an int64.
type NanoUSD int64

// String formats n as dollars, exactly, without trailing zeros past the
// cents: 8805 is "$0.000008805", 1.5e9 is "$1.50".
func (n NanoUSD) String() string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	frac := strings.TrimRight(fmt.Sprintf("%09d", n%1e9), "0")
	if len(frac) < 2 {
		frac += strings.Repeat("0", 2-len(frac))
	}
	return fmt.Sprintf("%s$%d.%s", sign, n/1e9, frac)
}

// ParseUSD reads an amount of dollars written as a decimal ("0.05",
// "$1.50", "0.000008805"), at most 9 fractional digits and $9 billion.
// It returns a [*ValidationError] for field "usd" otherwise.
func ParseUSD(s string) (NanoUSD, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "$")
	whole, frac, _ := strings.Cut(t, ".")
	if whole == "" || len(whole) > 10 || len(frac) > 9 || strings.Trim(whole+frac, "0123456789") != "" {
		return 0, invalidf("usd", "%.40q is not an amount of dollars with at most 9 decimals", s)
	}
	n, err := strconv.ParseInt(whole+frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	if err != nil || n > 9e18 {
		return 0, invalidf("usd", "%.40q is more than $9 billion", s)
	}
	return NanoUSD(n), nil
}

// Cost is what a run cost: its attempts' usage ([Usage]) priced with one
// price table, in exact nano-dollars. A [Pricer] computes it when the run
// is shown; nothing monetary is stored on the run.
type Cost struct {
	// TotalNanoUSD is the sum of the attempts' totals.
	TotalNanoUSD NanoUSD `json:"total_nano_usd"`
	// PriceVersion names the price table (and its overrides) that priced
	// the run, for example "2026-12-02" or "2026-12-02+acme-2027".
	PriceVersion string `json:"price_version"`
	// Components sums the attempts' items by component (see the
	// Component constants).
	Components map[string]NanoUSD `json:"components,omitempty"`
	// Attempts is the cost of each attempt, in attempt order.
	Attempts []AttemptCost `json:"attempts,omitempty"`
	// Unpriced lists the price keys the table had no price for; their
	// quantities are left out of the total.
	Unpriced []string `json:"unpriced,omitempty"`
}

// AttemptCost is what one attempt cost.
type AttemptCost struct {
	Attempt      int     `json:"attempt"`
	TotalNanoUSD NanoUSD `json:"total_nano_usd"`
	// Items are the priced quantities, one per component and price.
	Items []CostItem `json:"items,omitempty"`
}

// CostItem is one priced quantity of an attempt: Quantity Unit at the
// table's Price, rounded half up to whole nano-dollars.
type CostItem struct {
	// Component is one of the Component constants.
	Component string `json:"component"`
	// Price is the price table's key, for example "lambda.arm64.gb_second".
	Price string `json:"price"`
	// Quantity is the exact quantity in Unit, as a decimal string
	// ("0.0125" GB-seconds).
	Quantity string  `json:"quantity"`
	Unit     string  `json:"unit"`
	NanoUSD  NanoUSD `json:"nano_usd"`
}

// The components of a cost.
const (
	// ComponentCompute is the compute service's duration charge.
	ComponentCompute = "compute"
	// ComponentRequests is the compute service's per-invocation charge.
	ComponentRequests = "requests"
	// ComponentControlPlane is the control plane's capacity (DynamoDB
	// read and write request units, the engine's and the worker's).
	ComponentControlPlane = "control_plane"
	// ComponentKMS is key-management requests (the engine's seals and the
	// worker's opens).
	ComponentKMS = "kms"
	// ComponentPayload is object-storage requests for payloads kept by
	// reference (the worker's reads and writes).
	ComponentPayload = "payload"
)

// Pricer prices runs. The engine calls it on every run it returns
// ([EngineOptions.Pricer]); package pricing implements it.
type Pricer interface {
	// Price returns what r cost so far, from its attempts' usage. It must
	// not change r.
	Price(r *Run) *Cost
}

// Validate checks a usage a worker reports: no negative quantity, Arch
// "arm64", "x86_64" or empty, Billing "request", "instance", "job" or
// empty. A nil usage is valid. It returns a [*ValidationError] naming the
// field "usage.NAME".
func (u *Usage) Validate() error {
	if u == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"duration_ms", float64(u.DurationMs)}, {"billed_duration_ms", float64(u.BilledDurationMs)}, {"memory_mb", float64(u.MemoryMB)},
		{"vcpu", u.VCPU}, {"requests", float64(u.Requests)}, {"read_units", u.ReadUnits}, {"write_units", u.WriteUnits},
		{"kms_requests", float64(u.KMSRequests)}, {"offloaded_bytes", float64(u.OffloadedBytes)},
		{"payload_writes", float64(u.PayloadWrites)}, {"payload_reads", float64(u.PayloadReads)}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return invalidf("usage."+f.name, "%v must be a non-negative number", f.v)
		}
	}
	switch {
	case u.Arch != "" && u.Arch != "arm64" && u.Arch != "x86_64":
		return invalidf("usage.arch", "%.20q must be arm64 or x86_64", u.Arch)
	case u.Billing != "" && u.Billing != "request" && u.Billing != "instance" && u.Billing != "job":
		return invalidf("usage.billing", "%.20q must be request, instance or job", u.Billing)
	case u.PayloadStore != "" && u.PayloadStore != "s3" && u.PayloadStore != "gs" && u.PayloadStore != "file":
		return invalidf("usage.payload_store", "%.20q must be s3, gs or file", u.PayloadStore)
	}
	return nil
}

// ValidateShape checks a compute shape a worker states when it claims
// ([Claim.Usage]): valid as [Usage.Validate] checks it, with only the
// shape fields MemoryMB, VCPU, Arch and Billing set (durations, requests,
// capacity and bytes are counted at the finish). A nil usage is valid. It
// returns a [*ValidationError] naming the field "usage.NAME".
func (u *Usage) ValidateShape() error {
	if err := u.Validate(); err != nil {
		return err
	}
	if u == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"duration_ms", u.DurationMs != 0}, {"billed_duration_ms", u.BilledDurationMs != 0}, {"requests", u.Requests != 0},
		{"read_units", u.ReadUnits != 0}, {"write_units", u.WriteUnits != 0}, {"kms_requests", u.KMSRequests != 0},
		{"offloaded_bytes", u.OffloadedBytes != 0}, {"payload_writes", u.PayloadWrites != 0}, {"payload_reads", u.PayloadReads != 0},
		{"payload_store", u.PayloadStore != ""}} {
		if f.set {
			return invalidf("usage."+f.name, "is counted at the finish, not stated at the claim (a claim states memory_mb, vcpu, arch and billing)")
		}
	}
	return nil
}

// Shape returns u's compute shape: MemoryMB, VCPU, Arch and Billing,
// nil when u sets none of them.
func (u *Usage) Shape() *Usage {
	if u == nil {
		return nil
	}
	s := Usage{MemoryMB: u.MemoryMB, VCPU: u.VCPU, Arch: u.Arch, Billing: u.Billing}
	if s == (Usage{}) {
		return nil
	}
	return &s
}

// Plus returns u with o added: durations, capacity, requests and bytes are
// summed; the compute shape (MemoryMB, VCPU, Arch, Billing) is o's where o
// sets it. A nil receiver or argument counts as zero usage.
func (u *Usage) Plus(o *Usage) *Usage {
	var s Usage
	if u != nil {
		s = *u
	}
	if o == nil {
		return &s
	}
	s.DurationMs += o.DurationMs
	s.BilledDurationMs += o.BilledDurationMs
	s.Requests += o.Requests
	s.ReadUnits += o.ReadUnits
	s.WriteUnits += o.WriteUnits
	s.KMSRequests += o.KMSRequests
	s.OffloadedBytes += o.OffloadedBytes
	s.PayloadWrites += o.PayloadWrites
	s.PayloadReads += o.PayloadReads
	s.PayloadStore = pick(o.PayloadStore, s.PayloadStore)
	s.MemoryMB = pick(o.MemoryMB, s.MemoryMB)
	s.VCPU = pick(o.VCPU, s.VCPU)
	s.Arch = pick(o.Arch, s.Arch)
	s.Billing = pick(o.Billing, s.Billing)
	return &s
}

func pick[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// Meter counts what a call consumed on a run's behalf, for [Usage]: the
// engine puts one in the context of the seals it makes for an attempt, and
// key-management adapters add their requests with [AddKMSRequests]; the
// engine adds the payloads it stores ([AddPayloadWrite]). Safe for
// concurrent use.
type Meter struct {
	kms    atomic.Int64
	writes atomic.Int64
	bytes  atomic.Int64
	kind   atomic.Value // string: the store's kind
}

// KMSRequests returns the key-management requests counted so far.
func (m *Meter) KMSRequests() int64 { return m.kms.Load() }

// Usage returns what m counted as a Usage, nil when it counted nothing.
func (m *Meter) Usage() *Usage {
	u := Usage{KMSRequests: m.KMSRequests(), PayloadWrites: m.writes.Load(), OffloadedBytes: m.bytes.Load()}
	if u.PayloadWrites > 0 {
		u.PayloadStore, _ = m.kind.Load().(string)
	}
	if u == (Usage{}) {
		return nil
	}
	return &u
}

type meterKey struct{}

// WithMeter returns ctx carrying m.
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// AddKMSRequests adds n key-management requests to the [Meter] ctx
// carries, if any.
func AddKMSRequests(ctx context.Context, n int) {
	if m, ok := ctx.Value(meterKey{}).(*Meter); ok && n > 0 {
		m.kms.Add(int64(n))
	}
}

// AddPayloadWrite adds one payload object written, ref, to the [Meter]
// ctx carries, if any: a write request of ref's store and its bytes
// offloaded.
func AddPayloadWrite(ctx context.Context, ref *PayloadRef) {
	if m, ok := ctx.Value(meterKey{}).(*Meter); ok && ref != nil {
		m.writes.Add(1)
		m.bytes.Add(ref.Size)
		m.kind.Store(PayloadStoreKind(ref.Store))
	}
}
