package envelope_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/sortie-run/sortie/crypto/envelope"
)

// stored mirrors the envelope's JSON, decoded leniently, to tell a
// semantically unchanged envelope from a tampered one.
type stored struct {
	V   int
	KID string
	Ctx map[string]string
	DK  []byte
	CT  []byte
}

// newFixtureKeeper returns a keeper with local keys local-1 (primary) and
// local-2; the first sealed testdata/fuzz-envelope.json with binding.
func newFixtureKeeper(t testing.TB) *envelope.Keeper {
	r := ring(t, "local-1", localKEK(t, 1))
	if err := r.Add("local-2", localKEK(t, 2)); err != nil {
		t.Fatal(err)
	}
	return envelope.New(r, nil)
}

// fixture returns the envelope of testdata/fuzz-envelope.json. Sealing is
// randomised, so the fuzz workers share this one envelope to know which
// content is the original.
func fixture(t testing.TB) []byte {
	b, err := os.ReadFile("testdata/fuzz-envelope.json")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// The fixture opens: the format has not drifted from what it was.
func TestFixtureOpens(t *testing.T) {
	if got := open(t, newFixtureKeeper(t), fixture(t), binding); got != secret {
		t.Fatalf("Open(fixture) = %q, want %q", got, secret)
	}
}

// FuzzOpen feeds Open tampered, truncated and re-keyed envelopes and wrong
// bindings: it must never panic, and it must fail unless both the
// envelope's content and the binding are the original ones.
func FuzzOpen(f *testing.F) {
	k := newFixtureKeeper(f)
	sealed := fixture(f)
	var orig stored
	if err := json.Unmarshal(sealed, &orig); err != nil {
		f.Fatal(err)
	}
	f.Add(sealed, binding.RunID, binding.Attempt, binding.Purpose, binding.Agent)
	f.Add(sealed[:len(sealed)/2], binding.RunID, binding.Attempt, binding.Purpose, binding.Agent)
	f.Add(bytes.Replace(sealed, []byte(`"local-1"`), []byte(`"local-2"`), 1), binding.RunID, 1, binding.Purpose, binding.Agent)
	f.Add(bytes.Replace(sealed, []byte(`"local-1"`), []byte(`"gone"`), 1), binding.RunID, 1, binding.Purpose, binding.Agent)
	f.Add(sealed, binding.RunID, 2, binding.Purpose, binding.Agent)
	f.Add(sealed, "01JRUN0000000000000000000B", 1, binding.Purpose, binding.Agent)
	f.Add(sealed, binding.RunID, 1, envelope.PurposeAtRest, binding.Agent)
	f.Add([]byte(`{"v":1,"kid":"local-1","ctx":{},"dk":"AA==","ct":""}`), binding.RunID, 1, binding.Purpose, binding.Agent)
	for _, tail := range []string{"}", "]", " {}", "x", " \r\n"} { // only the whitespace may open
		f.Add(append(sealed[:len(sealed):len(sealed)], tail...), binding.RunID, binding.Attempt, binding.Purpose, binding.Agent)
	}
	f.Fuzz(func(t *testing.T, in []byte, runID string, attempt int, purpose, agent string) {
		b := envelope.Binding{RunID: runID, Attempt: attempt, InvocationVersion: binding.InvocationVersion, Purpose: purpose, Agent: agent}
		pt, err := k.Open(bg, in, b)
		if err != nil {
			return
		}
		var got stored
		if json.Unmarshal(in, &got) != nil || !reflect.DeepEqual(got, orig) {
			t.Fatalf("Open accepted a changed envelope %q: %+v vs %+v", in, got, orig)
		}
		if b != binding {
			t.Fatalf("Open accepted binding %+v, want only %+v", b, binding)
		}
		if string(pt) != secret {
			t.Fatalf("Open returned %q, want %q", pt, secret)
		}
	})
}
