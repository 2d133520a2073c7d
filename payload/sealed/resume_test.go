package sealed_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/payload"
	"github.com/sortie-run/sortie/payload/sealed"
)

// sessionToken is a session token of n characters of the base64 alphabet
// STS tokens use ('+', '/' and '=' are escaped in a URL, so it grows).
func sessionToken(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// resumed grants attempt 2 of run, which resumes it: its variables, resume
// input and checkpoint are all kept in the store.
func (r *rig) resumed(t *testing.T, run sortie.RunID, input, checkpoint []byte) (*sortie.Invocation, *sealed.URLs) {
	t.Helper()
	ctx := t.Context()
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: run, Attempt: 2, LaunchID: sortie.NewLaunchID(),
		Agent: sortie.Manifest{Name: "probe", Version: "1", Runtime: "go:probe"}, DeadlineMs: time.Now().Add(time.Minute).UnixMilli(),
		Resume: &sortie.Resume{}}
	var err error
	for _, p := range []struct {
		name string
		v    []byte
		ref  **sortie.PayloadRef
	}{{"variables", bigValue(300 << 10), &inv.VariablesRef}, {"resume-input-2-abc", input, &inv.Resume.InputRef}, {"checkpoint-1", checkpoint, &inv.Resume.CheckpointRef}} {
		if *p.ref, err = r.store.Put(ctx, run, "probe", p.name, p.name, p.v); err != nil {
			t.Fatalf("Put(%s) = %v", p.name, err)
		}
	}
	return inv, r.seal(t, inv)
}

// A resumed attempt on a host signing with a 1,200-character session
// token gets GET URLs of its variables, resume input and checkpoint and
// PUT URLs of its result and its own checkpoint; through them alone the worker reads
// the input and the checkpoint back exactly and writes a new checkpoint
// the host reads.
func TestResumedAttemptURLs(t *testing.T) {
	r := newRigToken(t, sessionToken(1200))
	run := sortie.NewRunID(time.Now())
	input, checkpoint := bigValue(1<<20), bigValue(1<<20)
	inv, urls := r.resumed(t, run, input, checkpoint)
	next := payload.Key(run, sortie.CheckpointPayloadName(2))
	if len(urls.Get) != 3 || len(urls.Put) != 2+sortie.MaxStepSlots || urls.Put[next] == "" || urls.Get[inv.Resume.InputRef.Key] == "" || urls.Get[inv.Resume.CheckpointRef.Key] == "" {
		t.Fatalf("granted %d GET and %d PUT URLs; want GETs of the variables, input and checkpoint, PUTs of result-2, checkpoint-2 and the step slots", len(urls.Get), len(urls.Put))
	}
	w := sealed.NewURLStore(urls, r.kr, nil)
	for name, p := range map[string]struct {
		ref  *sortie.PayloadRef
		want []byte
	}{"input": {inv.Resume.InputRef, input}, "checkpoint": {inv.Resume.CheckpointRef, checkpoint}} {
		if got, err := w.Get(t.Context(), run, "probe", p.ref); err != nil || !bytes.Equal(got, p.want) {
			t.Errorf("URLStore.Get(%s) = %d bytes, %v; want the %d stored", name, len(got), err, len(p.want))
		}
	}
	again := bigValue(400 << 10)
	ref, err := w.Put(t.Context(), run, "probe", sortie.CheckpointPayloadName(2), "interrupt.checkpoint", again)
	if err != nil {
		t.Fatalf("URLStore.Put(checkpoint-2) = %v", err)
	}
	if back, err := r.store.Get(t.Context(), run, "probe", ref); err != nil || !bytes.Equal(back, again) {
		t.Fatalf("the host's Get(checkpoint-2) = %d bytes, %v; want the %d put", len(back), err, len(again))
	}
}

// Sealed URLs are compressed (every URL repeats the session token): the
// URLs of a resumed attempt (three GETs; PUTs of its result, its
// checkpoint and sortie.MaxStepSlots step slots) signed with a
// 1,600-character token (the
// longest the S3 fake takes in a header) take well under half of
// sortie.MaxSealedPayloadURLsBytes, and DecodeURLs still reads
// uncompressed JSON and refuses a broken gzip stream.
func TestSealedURLsCompressed(t *testing.T) {
	r := newRigToken(t, sessionToken(1600))
	run := sortie.NewRunID(time.Now())
	inv, urls := r.resumed(t, run, bigValue(1000), bigValue(1000))
	plain, _ := json.Marshal(urls)
	t.Logf("%d URLs with a 1,600-character session token: %d bytes of JSON, %d bytes sealed (limit %d)", len(urls.Get)+len(urls.Put), len(plain), len(inv.SealedPayloadURLs), sortie.MaxSealedPayloadURLsBytes)
	if len(inv.SealedPayloadURLs) > sortie.MaxSealedPayloadURLsBytes/2 || len(plain) < sortie.MaxSealedPayloadURLsBytes*3/4 {
		t.Errorf("sealed URLs = %d bytes for %d bytes of JSON; want them compressed under half the %d-byte limit", len(inv.SealedPayloadURLs), len(plain), sortie.MaxSealedPayloadURLsBytes)
	}
	if back, err := sealed.DecodeURLs(plain); err != nil || len(back.Get) != 3 {
		t.Errorf("DecodeURLs(uncompressed JSON) = %v; want the 3 GET URLs", err)
	}
	zipped, _ := sealed.EncodeURLs(urls)
	if _, err := sealed.DecodeURLs(zipped[:len(zipped)/2]); !errors.Is(err, sortie.ErrInvalidArgument) || strings.Contains(err.Error(), "X-Amz") {
		t.Errorf("DecodeURLs(half a gzip stream) = %v, want a ValidationError holding no URL", err)
	}
}
