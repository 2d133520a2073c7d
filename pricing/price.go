package pricing

import (
	"math"
	"math/big"
	"slices"
	"strings"

	"github.com/sortie-run/sortie"
)

var _ sortie.Pricer = (*Table)(nil)

// quantity is an exact quantity num/den of a unit.
type quantity struct {
	num, den int64
}

// item is a quantity to price under a key.
type item struct {
	component, key string
	q              quantity
}

// Price implements [sortie.Pricer]: it prices each attempt's [sortie.Usage]
// with t (see [Table.Attempt]) and sums them. A run without attempts
// costs 0.
func (t *Table) Price(r *sortie.Run) *sortie.Cost {
	c := &sortie.Cost{PriceVersion: t.Version, Components: map[string]sortie.NanoUSD{}}
	for i := range r.Attempts {
		ac, unpriced := t.Attempt(&r.Attempts[i])
		c.Attempts = append(c.Attempts, ac)
		c.TotalNanoUSD = addSat(c.TotalNanoUSD, ac.TotalNanoUSD)
		for _, it := range ac.Items {
			c.Components[it.Component] = addSat(c.Components[it.Component], it.NanoUSD)
		}
		for _, k := range unpriced {
			if !slices.Contains(c.Unpriced, k) {
				c.Unpriced = append(c.Unpriced, k)
			}
		}
	}
	return c
}

// Attempt prices one attempt from its usage and its launcher's Ref:
//
//   - compute: Lambda memory × billed duration at
//     lambda.ARCH.gb_second (1 GB = 1024 MB; ARCH x86_64 when the usage
//     names none); Cloud Run vCPU × billed duration and memory × billed
//     duration at cloudrun.BILLING.vcpu_second and .gib_second (BILLING
//     from the usage, else "job" or "instance" by the Ref's mode); local
//     attempts at local.second (0 in the default table);
//   - requests: Lambda and request-billed Cloud Run attempts, the
//     recorded requests but at least one once the attempt was launched;
//   - control_plane: DynamoDB read and write request units;
//   - kms: key-management requests at kms.aws, kms.gcp or kms.local
//     by launcher.
//
// Each item is rounded half up to whole nano-dollars. It returns the keys
// it found no price for (their items are left out).
func (t *Table) Attempt(a *sortie.Attempt) (sortie.AttemptCost, []string) {
	ac := sortie.AttemptCost{Attempt: a.Number}
	var unpriced []string
	for _, it := range items(a) {
		p, ok := t.Prices[it.key]
		if !ok || p.pico == nil {
			unpriced = append(unpriced, it.key)
			continue
		}
		n := p.cost(it.q)
		ac.Items = append(ac.Items, sortie.CostItem{Component: it.component, Price: it.key,
			Quantity: decimal(it.q), Unit: p.Unit, NanoUSD: n})
		ac.TotalNanoUSD = addSat(ac.TotalNanoUSD, n)
	}
	return ac, unpriced
}

// cost returns p × q in nano-dollars, rounded half up.
func (p Price) cost(q quantity) sortie.NanoUSD {
	num := new(big.Int).Mul(p.pico, big.NewInt(q.num))
	den := new(big.Int).Mul(big.NewInt(q.den), big.NewInt(p.Per*1000)) // pico → nano
	num.Mul(num, big.NewInt(2)).Add(num, den)                          // (2n + d) / 2d = n/d + ½
	den.Mul(den, big.NewInt(2))
	n := num.Quo(num, den)
	if !n.IsInt64() {
		return math.MaxInt64
	}
	return sortie.NanoUSD(n.Int64())
}

// items lists what attempt a consumed, by component and price key.
func items(a *sortie.Attempt) []item {
	u := a.Usage
	if u == nil {
		u = &sortie.Usage{}
	}
	provider := ""
	if a.Ref != nil {
		provider = a.Ref.Provider
	}
	out := compute(provider, a.Ref, u)
	if req := requests(provider, a.Ref, u); req.q.num > 0 {
		out = append(out, req)
	}
	if u.WriteUnits > 0 {
		out = append(out, item{sortie.ComponentControlPlane, "dynamodb.write_request_unit", milli(u.WriteUnits)})
	}
	if u.ReadUnits > 0 {
		out = append(out, item{sortie.ComponentControlPlane, "dynamodb.read_request_unit", milli(u.ReadUnits)})
	}
	if u.KMSRequests > 0 && provider != "" { // whose KMS is known from the launch's Ref
		out = append(out, item{sortie.ComponentKMS, "kms." + kmsOf(provider) + ".request", quantity{u.KMSRequests, 1}})
	}
	return append(out, payloadItems(u)...)
}

// payloadPrices are the price keys of payload writes and reads, by the
// kind of store ([sortie.Usage.PayloadStore]); a write's key is never a
// read's, so an attempt's items tell them apart.
var payloadPrices = map[string][2]string{
	"s3":   {"s3.put_request", "s3.get_request"},
	"gs":   {"gcs.class_a_operation", "gcs.class_b_operation"},
	"file": {"file.put_request", "file.get_request"},
}

// payloadItems returns the payload request items of a usage: writes and
// reads, each priced by the store's kind.
func payloadItems(u *sortie.Usage) []item {
	keys, ok := payloadPrices[u.PayloadStore]
	if !ok {
		return nil
	}
	var out []item
	for i, n := range []int64{u.PayloadWrites, u.PayloadReads} {
		if n > 0 {
			out = append(out, item{sortie.ComponentPayload, keys[i], quantity{n, 1}})
		}
	}
	return out
}

// compute returns the compute items of a usage on provider.
func compute(provider string, ref *sortie.Ref, u *sortie.Usage) []item {
	ms := u.BilledDurationMs
	switch provider {
	case "lambda":
		if ms == 0 || u.MemoryMB == 0 {
			return nil
		}
		arch := u.Arch
		if arch == "" {
			arch = "x86_64"
		}
		return []item{{sortie.ComponentCompute, "lambda." + arch + ".gb_second", quantity{u.MemoryMB * ms, 1024 * 1000}}}
	case "cloudrun":
		if ms == 0 {
			return nil
		}
		b := billing(ref, u)
		return []item{
			{sortie.ComponentCompute, "cloudrun." + b + ".vcpu_second", quantity{milli(u.VCPU).num * ms, 1000 * 1000}},
			{sortie.ComponentCompute, "cloudrun." + b + ".gib_second", quantity{u.MemoryMB * ms, 1024 * 1000}},
		}
	case "local":
		return []item{{sortie.ComponentCompute, "local.second", quantity{u.DurationMs, 1000}}}
	}
	return nil
}

// requests returns the compute service's request item of a usage.
func requests(provider string, ref *sortie.Ref, u *sortie.Usage) item {
	n := u.Requests
	if ref != nil && n == 0 {
		n = 1 // launched: invoked at least once
	}
	switch {
	case provider == "lambda":
		return item{sortie.ComponentRequests, "lambda.request", quantity{n, 1}}
	case provider == "cloudrun" && billing(ref, u) == "request":
		return item{sortie.ComponentRequests, "cloudrun.request.request", quantity{n, 1}}
	}
	return item{}
}

// billing returns how Cloud Run bills an attempt: the usage's word, else
// "job" for a job execution and "instance" for a service.
func billing(ref *sortie.Ref, u *sortie.Usage) string {
	if u.Billing != "" {
		return u.Billing
	}
	if ref != nil && ref.Detail["mode"] == "service" {
		return "instance"
	}
	return "job"
}

func kmsOf(provider string) string {
	switch provider {
	case "cloudrun":
		return "gcp"
	case "local":
		return "local"
	}
	return "aws"
}

// milli returns x, a capacity or vCPU figure, as thousandths (DynamoDB
// reports half units; Cloud Run allocates vCPU in thousandths).
func milli(x float64) quantity {
	return quantity{int64(math.Round(x * 1000)), 1000}
}

// decimal writes q exactly: every denominator here is a product of 2s and
// 5s, so 20 fractional digits always suffice.
func decimal(q quantity) string {
	s := new(big.Rat).SetFrac64(q.num, q.den).FloatString(20)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// addSat returns a + b for non-negative amounts, at most math.MaxInt64.
func addSat(a, b sortie.NanoUSD) sortie.NanoUSD {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
