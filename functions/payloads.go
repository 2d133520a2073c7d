package functions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/payload/sealed"
)

// PayloadURLOpener opens the payload URLs a host sealed into an
// invocation ([sortie.Invocation.SealedPayloadURLs]) and seals and opens
// the payloads they reach: the worker's keyring, crypto/envelope's
// Config.
type PayloadURLOpener interface {
	sealed.Sealer
	sealed.URLOpener
}

// payloadStore returns the attempt's payload store, made once: a store
// over the invocation's payload URLs when it carries them (package
// payload/sealed; it sets the attempt's step slots), else the worker's
// Payloads (nil without one). URLs
// the worker cannot open refuse the attempt with error type "payload"
// (retryable when the error wraps sortie.ErrUnavailable).
func (a *attempt) payloadStore(ctx context.Context) (sortie.PayloadStore, *sortie.Outcome) {
	a.payloadsMu.Lock()
	defer a.payloadsMu.Unlock()
	if a.payloads != nil || len(a.inv.SealedPayloadURLs) == 0 {
		if a.payloads == nil && a.w.Payloads != nil {
			a.payloads = metered(a.w.Payloads)
		}
		return a.payloads, nil
	}
	if a.w.PayloadURLs == nil {
		o := errorOutcome(errTypePayload, "the invocation carries payload URLs and this worker cannot open them (Worker.PayloadURLs)", false)
		return nil, &o
	}
	urls, n, err := sealed.OpenURLs(ctx, a.w.PayloadURLs, a.inv)
	a.payloadKMS += n
	if err != nil {
		o := errorOutcome(errTypePayload, "open the attempt's payload URLs: "+err.Error(), errors.Is(err, sortie.ErrUnavailable))
		return nil, &o
	}
	a.payloads = metered(sealed.NewURLStore(urls, a.w.PayloadURLs, nil))
	a.stepSlots = urls.StepSlots(a.inv.RunID, a.inv.Attempt)
	return a.payloads, nil
}

// meteredStore is an attempt's payload store counting the requests it
// makes, for the attempt's usage ([sortie.Usage.PayloadWrites],
// PayloadReads, PayloadStore). It is safe for concurrent use (steps).
type meteredStore struct {
	sortie.PayloadStore
	writes, reads atomic.Int64
	kind          string
}

// metered returns s counting its requests; s names its store with a
// Name method (payload.Store, sealed.URLStore), else the kind stays empty
// and the requests are counted but not priced.
func metered(s sortie.PayloadStore) *meteredStore {
	m := &meteredStore{PayloadStore: s}
	if n, ok := s.(interface{ Name() string }); ok {
		m.kind = sortie.PayloadStoreKind(n.Name())
	}
	return m
}

// Put implements [sortie.PayloadStore], counting one write.
func (m *meteredStore) Put(ctx context.Context, run sortie.RunID, agent, name, field string, value []byte) (*sortie.PayloadRef, error) {
	m.writes.Add(1)
	return m.PayloadStore.Put(ctx, run, agent, name, field, value)
}

// Get implements [sortie.PayloadStore], counting one read.
func (m *meteredStore) Get(ctx context.Context, run sortie.RunID, agent string, ref *sortie.PayloadRef) ([]byte, error) {
	m.reads.Add(1)
	return m.PayloadStore.Get(ctx, run, agent, ref)
}

// payloadUsage adds to u the payload requests made for the attempt: its
// own store's, or, when its handler ran in a warm pool process (which
// reads and writes payloads itself, see runsHere), one read of each
// payload it was handed by reference (Invocation.PayloadRefs) and one write of a result
// or checkpoint o names by reference (writtenRef), with its bytes
// offloaded.
func (a *attempt) payloadUsage(u *sortie.Usage, o sortie.Outcome) {
	var writes, reads int64
	var kind string
	if m, ok := a.payloads.(*meteredStore); ok {
		writes, reads, kind = m.writes.Load(), m.reads.Load(), m.kind
	}
	if !a.w.runsHere(a.inv.Agent.Runtime) {
		if w, r, k := a.warmSteps.counts(); w+r > 0 {
			writes, reads, kind = writes+w, reads+r, k
		}
		for _, ref := range a.inv.PayloadRefs() {
			reads, kind = reads+1, sortie.PayloadStoreKind(ref.Store)
		}
		if ref := writtenRef(o); ref != nil && u.OffloadedBytes == 0 {
			writes, kind = writes+1, sortie.PayloadStoreKind(ref.Store)
			u.OffloadedBytes = ref.Size
		}
	}
	if writes+reads > 0 {
		u.PayloadWrites, u.PayloadReads, u.PayloadStore = writes, reads, kind
	}
	u.OffloadedBytes += a.stepBytes.Load()
}

// errTypePayload is an attempt whose variables, kept in the payload
// store, could not be read.
const errTypePayload = "payload"

// runsHere reports whether the runtime ref runs its handler in this
// process (or an exec process per attempt) rather than on a warm pool,
// whose process reads the variables itself.
func (w *Worker) runsHere(ref string) bool {
	kind, _, _ := strings.Cut(ref, ":")
	if kind == "go" {
		return w.Warm["go"] == nil
	}
	return w.Warm[ref] == nil
}

// loadVariables reads the attempt's variables from the worker's payload
// store when its invocation names them by reference. A failure is the
// attempt's outcome: retryable when the store was unavailable, not when
// the object is not the one referenced (sortie.ErrPayloadIntegrity).
func (w *Worker) loadVariables(ctx context.Context, a *attempt) *sortie.Outcome {
	ref := a.inv.VariablesRef
	if ref == nil || !w.runsHere(a.inv.Agent.Runtime) {
		return nil
	}
	vars, refused := a.readPayload(ctx, ref, "variables")
	if refused != nil {
		return refused
	}
	inv := *a.inv
	inv.Variables, inv.VariablesRef = vars, nil
	a.inv = &inv
	return nil
}

// storeResult keeps a result over sortie.MaxResultBytes in the worker's
// payload store and returns the outcome naming it by reference, and the
// bytes stored (an interrupt's checkpoint likewise: storeCheckpoint).
// Without a store, or over the store's limits, the outcome is a
// permanent error of type "output" naming the size and the limit.
func (w *Worker) storeResult(ctx context.Context, a *attempt, o sortie.Outcome) (sortie.Outcome, int64) {
	if o.Interrupt != nil {
		return w.storeCheckpoint(ctx, a, o)
	}
	n := len(o.Result)
	if n <= sortie.MaxResultBytes {
		return o, 0
	}
	inv := a.inv
	store, refused := a.payloadStore(ctx)
	if refused != nil {
		return *refused, 0
	}
	if store == nil {
		return errorOutcome(errTypeOutput, fmt.Sprintf("output is %d bytes of JSON, limit %d (sortie.MaxResultBytes; this worker has no payload store for larger ones)", n, sortie.MaxResultBytes), false), 0
	}
	ref, err := store.Put(ctx, inv.RunID, inv.Agent.Name, sortie.ResultPayloadName(inv.Attempt), "output", o.Result)
	if err != nil {
		return errorOutcome(errTypeOutput, "store the output: "+err.Error(), errors.Is(err, sortie.ErrUnavailable)), 0
	}
	return sortie.Outcome{ResultRef: ref}, int64(n)
}
