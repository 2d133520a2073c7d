package envelope_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sortie-run/sortie/crypto/envelope"
)

// A large envelope opens for its run, agent and key only; a flipped byte
// anywhere, a cut or another binding is refused, and the plaintext does
// not appear in it.
func TestLargeEnvelope(t *testing.T) {
	c := envelope.NewConfig(envelope.New(ring(t, "k1", localKEK(t, 5)), nil))
	value := bytes.Repeat([]byte("canary-secret-0123456789 "), 200<<10/25) // 200 KiB, over the JSON envelope's limit
	sealed, err := c.SealPayload(bg, testRun(1).ID, "probe", "runs/x/variables", value)
	if err != nil {
		t.Fatalf("SealPayload(200 KiB) = %v", err)
	}
	if bytes.Contains(sealed, []byte("canary-secret")) {
		t.Fatal("the large envelope holds its plaintext")
	}
	got, err := c.OpenPayload(bg, testRun(1).ID, "probe", "runs/x/variables", sealed)
	if err != nil || !bytes.Equal(got, value) {
		t.Fatalf("OpenPayload = %d bytes, %v; want the %d bytes sealed", len(got), err, len(value))
	}
	for _, i := range []int{0, 30, 60, len(sealed) / 2, len(sealed) - 1} {
		bad := bytes.Clone(sealed)
		bad[i] ^= 1
		if _, err := c.OpenPayload(bg, testRun(1).ID, "probe", "runs/x/variables", bad); err == nil {
			t.Errorf("OpenPayload(byte %d flipped) = nil error, want a refusal", i)
		}
	}
	if _, err := c.OpenPayload(bg, testRun(1).ID, "probe", "runs/x/variables", sealed[:len(sealed)-1]); !errors.Is(err, envelope.ErrAuth) {
		t.Errorf("OpenPayload(cut) = %v, want ErrAuth", err)
	}
	if _, err := c.OpenPayload(bg, testRun(1).ID, "probe", "runs/x/result", sealed); !errors.Is(err, envelope.ErrAuth) {
		t.Errorf("OpenPayload(another key) = %v, want ErrAuth", err)
	}
	if _, err := c.OpenPayload(bg, testRun(2).ID, "probe", "runs/x/variables", sealed); err == nil {
		t.Error("OpenPayload(another run) = nil error, want a refusal")
	}
	if _, err := c.OpenPayload(bg, testRun(1).ID, "probe", "runs/x/variables", []byte("{}")); !errors.Is(err, envelope.ErrMalformed) {
		t.Errorf("OpenPayload(JSON) = %v, want ErrMalformed", err)
	}
}

func FuzzOpenLarge(f *testing.F) {
	k := newFixtureKeeper(f)
	sealed, err := k.SealLarge(bg, []byte("payload"), binding)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealed)
	f.Add(sealed[:40])
	f.Fuzz(func(t *testing.T, in []byte) {
		pt, err := k.OpenLarge(bg, in, binding)
		if err == nil && string(pt) != "payload" {
			t.Fatalf("OpenLarge(%q) opened %q, want a refusal or what was sealed", in, pt)
		}
	})
}
