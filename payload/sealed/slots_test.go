package sealed_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/gcstest"
	"github.com/sortie-run/sortie/payload"
	"github.com/sortie-run/sortie/payload/sealed"
)

// withStepRefs returns attempt 2 of run with the variables by reference
// and n recorded steps whose results are kept by reference in store.
func withStepRefs(run sortie.RunID, store string, n int) *sortie.Invocation {
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: run, Attempt: 2, LaunchID: sortie.NewLaunchID(),
		Agent: sortie.Manifest{Name: "probe", Version: "1", Runtime: "go:probe"}, DeadlineMs: time.Now().Add(time.Minute).UnixMilli(),
		VariablesRef: &sortie.PayloadRef{Store: store, Key: payload.Key(run, "variables"), Size: 1, SHA256: strings.Repeat("a", 64)}}
	for i := range n {
		name := fmt.Sprintf("step-%d", i)
		inv.Steps = append(inv.Steps, sortie.Step{Name: name, Attempt: 1, Status: sortie.StepCompleted, ResultRef: &sortie.PayloadRef{
			Store: store, Key: payload.Key(run, sortie.StepSlotPayloadName(1, i)), Size: 100 << 10, SHA256: strings.Repeat("b", 64)}})
	}
	return inv
}

// sealedSizes logs, and returns, the sealed size of the URLs of inv
// granted with every slot and with none (the slots' PUT URLs removed
// and the rest sealed again).
func (r *rig) sealedSizes(t *testing.T, what string, inv *sortie.Invocation) (all, none int) {
	t.Helper()
	urls := r.seal(t, inv)
	if n := urls.StepSlots(inv.RunID, inv.Attempt); n != sortie.MaxStepSlots {
		t.Fatalf("%s: granted %d step slots, want all %d", what, n, sortie.MaxStepSlots)
	}
	all = len(inv.SealedPayloadURLs)
	for k := range sortie.MaxStepSlots {
		delete(urls.Put, payload.Key(inv.RunID, sortie.StepSlotPayloadName(inv.Attempt, k)))
	}
	plain, err := sealed.EncodeURLs(urls)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.kr.SealPayloadURLs(t.Context(), inv, plain)
	if err != nil {
		t.Fatal(err)
	}
	none = len(b)
	if none >= all {
		t.Errorf("%s: %d bytes sealed without the step slots, %d with them; want the slots to take room", what, none, all)
	}
	t.Logf("%s: %d GET and 2 PUT URLs sealed in %d bytes; with %d step slots %d bytes (%d a slot; limit %d)",
		what, len(urls.Get), none, sortie.MaxStepSlots, all, (all-none)/sortie.MaxStepSlots, sortie.MaxSealedPayloadURLsBytes)
	return all, none
}

// Step slots cost little where URLs share a session token: on S3 signing
// with a 1,600-character token and on Cloud Storage (V4 RSA signatures),
// an attempt with its variables by reference gets all
// sortie.MaxStepSlots slots, their sealed URLs under half the limit.
func TestStepSlotsSealedSize(t *testing.T) {
	s3 := newRigToken(t, sessionToken(1600))
	all, _ := s3.sealedSizes(t, "S3, 1,600-character session token", withStepRefs(sortie.NewRunID(time.Now()), "s3://payloads", 0))
	srv := gcstest.Start(t, "payloads")
	gcs := &rig{store: payload.New(srv.Bucket(t), srv.Name(), s3.kr, nil), kr: s3.kr}
	allGCS, _ := gcs.sealedSizes(t, "Cloud Storage", withStepRefs(sortie.NewRunID(time.Now()), srv.Name(), 0))
	if max(all, allGCS) > sortie.MaxSealedPayloadURLsBytes/2 {
		t.Errorf("sealed URLs with every slot: %d bytes on S3, %d on Cloud Storage; want both under half the %d-byte limit", all, allGCS, sortie.MaxSealedPayloadURLsBytes)
	}
}

// On Cloud Storage, whose URLs compress worst (each carries its own RSA
// signature), more recorded steps kept by reference leave fewer slots:
// the GET URLs of every such step are always granted, the slots are
// trimmed (the last first, never more as steps are added) so the sealed
// URLs fit, at some count only some slots remain, and when the GET URLs
// alone do not fit the grant fails naming their count.
func TestStepSlotsTrimmedOnCloudStorage(t *testing.T) {
	srv := gcstest.Start(t, "payloads")
	kr := keyring(t)
	r := &rig{store: payload.New(srv.Bucket(t), srv.Name(), kr, nil), kr: kr}
	g := payload.NewGranter(r.store, kr)
	run := sortie.NewRunID(time.Now())
	slots, trimmed := sortie.MaxStepSlots, false
	for n := 0; ; n++ {
		inv := withStepRefs(run, srv.Name(), n)
		if err := g.Seal(t.Context(), inv); err != nil {
			if want := fmt.Sprintf("%d GET URLs (%d of recorded steps", n+1, n); !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "X-Goog") || slots > 0 {
				t.Fatalf("Seal with %d steps by reference = %v; want the over-limit error naming %q, after the slots ran out (%d left)", n, err, want, slots)
			}
			t.Logf("with %d recorded steps by reference the GET URLs alone are over the limit", n)
			break
		}
		urls := r.seal(t, inv)
		got := urls.StepSlots(run, inv.Attempt)
		if len(urls.Get) != n+1 || len(urls.Put) != 2+got || got > slots || len(inv.SealedPayloadURLs) > sortie.MaxSealedPayloadURLsBytes {
			t.Fatalf("with %d steps by reference: %d GET URLs, %d PUT, %d slots (%d before), %d bytes sealed; want every GET, the result's and checkpoint's PUTs, slots never more, within %d bytes",
				n, len(urls.Get), len(urls.Put), got, slots, len(inv.SealedPayloadURLs), sortie.MaxSealedPayloadURLsBytes)
		}
		if got != slots {
			t.Logf("%d recorded steps by reference: %d slots, %d bytes sealed", n, got, len(inv.SealedPayloadURLs))
		}
		trimmed = trimmed || (got > 0 && got < sortie.MaxStepSlots)
		slots = got
	}
	if !trimmed {
		t.Errorf("no step count left only some of the %d slots; want them trimmed one by one", sortie.MaxStepSlots)
	}
}
