package sortie_test

import (
	"errors"
	"math"
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

func TestUsageValidate(t *testing.T) {
	for field, u := range map[string]*sortie.Usage{
		"usage.arch": {Arch: "sparc"}, "usage.billing": {Billing: "free"}, "usage.duration_ms": {DurationMs: -1},
		"usage.write_units": {WriteUnits: -0.5}, "usage.vcpu": {VCPU: math.NaN()},
	} {
		var ve *sortie.ValidationError
		if err := u.Validate(); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("Usage(%+v).Validate() = %v, want a ValidationError for %s", u, err, field)
		}
	}
	ok := &sortie.Usage{DurationMs: 1, Arch: "arm64", Billing: "job", Requests: 1, ReadUnits: 0.5}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate(%+v) = %v, want nil", ok, err)
	}
}

func TestParseUSD(t *testing.T) {
	for in, want := range map[string]sortie.NanoUSD{"0.05": 50_000_000, "$1.50": 1_500_000_000, "0.000008805": 8805, "3": 3_000_000_000} {
		if got, err := sortie.ParseUSD(in); err != nil || got != want {
			t.Errorf("ParseUSD(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "1.0000000001", "-1", "1e3", "99999999999", "."} {
		if _, err := sortie.ParseUSD(in); !errors.Is(err, sortie.ErrInvalidArgument) {
			t.Errorf("ParseUSD(%q) = %v, want ErrInvalidArgument", in, err)
		}
	}
}

func TestUsageValidateShape(t *testing.T) {
	for field, u := range map[string]*sortie.Usage{
		"usage.arch": {MemoryMB: 128, Arch: "sparc"}, "usage.memory_mb": {MemoryMB: -128}, "usage.vcpu": {VCPU: math.Inf(1)},
		"usage.duration_ms": {MemoryMB: 128, DurationMs: 5}, "usage.requests": {Requests: 1}, "usage.kms_requests": {KMSRequests: 2},
	} {
		var ve *sortie.ValidationError
		if err := u.ValidateShape(); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("Usage(%+v).ValidateShape() = %v, want a ValidationError for %s", u, err, field)
		}
	}
	ok := &sortie.Usage{MemoryMB: 512, VCPU: 1, Arch: "x86_64", Billing: "instance"}
	if err := ok.ValidateShape(); err != nil {
		t.Errorf("ValidateShape(%+v) = %v, want nil", ok, err)
	}
	if got := (&sortie.Usage{DurationMs: 9, MemoryMB: 512, Billing: "job", KMSRequests: 1}).Shape(); *got != (sortie.Usage{MemoryMB: 512, Billing: "job"}) {
		t.Errorf("Shape() = %+v, want memory and billing only", got)
	}
	if got := (&sortie.Usage{DurationMs: 9}).Shape(); got != nil {
		t.Errorf("Shape() of a usage without a shape = %+v, want nil", got)
	}
}
