package sortie_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

func TestNanoUSDString(t *testing.T) {
	for n, want := range map[sortie.NanoUSD]string{0: "$0.00", 8805: "$0.000008805", 1_500_000_000: "$1.50",
		10_000_000: "$0.01", 123_456_789_012: "$123.456789012", -20_000_000: "-$0.02"} {
		if got := n.String(); got != want {
			t.Errorf("NanoUSD(%d).String() = %q, want %q", int64(n), got, want)
		}
	}
}

// Plus sums what adds up and keeps the compute shape the worker reported.
func TestUsagePlus(t *testing.T) {
	engine := &sortie.Usage{KMSRequests: 2, WriteUnits: 1}
	worker := &sortie.Usage{DurationMs: 7, BilledDurationMs: 8, MemoryMB: 128, Arch: "arm64", Requests: 1, KMSRequests: 1, WriteUnits: 2.5}
	want := &sortie.Usage{DurationMs: 7, BilledDurationMs: 8, MemoryMB: 128, Arch: "arm64", Requests: 1, KMSRequests: 3, WriteUnits: 3.5}
	if d := cmp.Diff(want, engine.Plus(worker)); d != "" {
		t.Errorf("Plus (-want +got):\n%s", d)
	}
	if engine.KMSRequests != 2 {
		t.Errorf("Plus changed its receiver: %+v", engine)
	}
	var none *sortie.Usage
	if d := cmp.Diff(worker, none.Plus(worker)); d != "" {
		t.Errorf("nil.Plus (-want +got):\n%s", d)
	}
}
