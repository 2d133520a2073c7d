package envelope_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
)

var bg = context.Background()

// binding is the binding the tests seal with.
var binding = envelope.Binding{RunID: "01JRUN0000000000000000000A", Attempt: 1,
	InvocationVersion: sortie.InvocationVersion, Purpose: envelope.PurposeInvocation, Agent: "probe"}

// localKEK returns a local key-encryption key whose key is n repeated.
func localKEK(t testing.TB, n byte) *localkey.KEK {
	t.Helper()
	k, err := localkey.New(bytes.Repeat([]byte{n}, localkey.KeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// ring returns a keyring with kek as id, its primary.
func ring(t testing.TB, id string, kek envelope.KEK) *envelope.Keyring {
	t.Helper()
	r, err := envelope.NewKeyring(id, kek)
	if err != nil {
		t.Fatalf("NewKeyring(%q) = %v", id, err)
	}
	return r
}

func seal(t testing.TB, k *envelope.Keeper, pt string, b envelope.Binding) []byte {
	t.Helper()
	sealed, err := k.Seal(bg, []byte(pt), b)
	if err != nil {
		t.Fatalf("Seal(%q, %+v) = %v", pt, b, err)
	}
	return sealed
}

func open(t testing.TB, k *envelope.Keeper, sealed []byte, b envelope.Binding) string {
	t.Helper()
	pt, err := k.Open(bg, sealed, b)
	if err != nil {
		t.Fatalf("Open(%+v) = %v, want the plaintext", b, err)
	}
	return string(pt)
}

// fields decodes an envelope into a generic map, for tampering.
func fields(t testing.TB, sealed []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(sealed, &m); err != nil {
		t.Fatalf("envelope %s is not a JSON object: %v", sealed, err)
	}
	return m
}

func encode(t testing.TB, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// clock is a settable clock for the cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
