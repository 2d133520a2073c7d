package sign_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sortie-run/sortie/crypto/sign"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { return c.t }

func TestMemoryReplayCacheExpiresAndBounds(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	c := sign.NewMemoryReplayCache(&sign.MemoryReplayCacheOptions{MaxEntries: 3, Now: clk.Now})
	exp := func(s int64) time.Time { return time.Unix(1000+s, 0) }
	if c.Seen("a", exp(10)) || !c.Seen("a", exp(10)) {
		t.Fatal(`Seen("a") twice = want false then true`)
	}
	clk.t = exp(10)
	if c.Seen("a", exp(20)) {
		t.Error(`Seen("a") at its expiry = true, want false (expired)`)
	}
	for i, id := range []string{"b", "c", "d"} {
		if c.Seen(id, exp(int64(30+i))) {
			t.Errorf("Seen(%q) = true on first sight", id)
		}
	}
	if n := c.Len(); n != 3 {
		t.Errorf("Len() = %d with MaxEntries 3, want 3", n)
	}
	// "a" (expiry 20) was closest to its expiry, so it was forgotten.
	if c.Seen("a", exp(40)) {
		t.Error(`Seen("a") after eviction = true, want false`)
	}
	if !c.Seen("d", exp(40)) {
		t.Error(`Seen("d") = false, want true: the newest entries stay`)
	}
	clk.t = exp(100)
	if c.Seen("z", exp(200)); c.Len() != 1 {
		t.Errorf("Len() = %d after every other entry expired, want 1", c.Len())
	}
}

func BenchmarkMemoryReplayCacheSeen(b *testing.B) {
	c := sign.NewMemoryReplayCache(&sign.MemoryReplayCacheOptions{MaxEntries: 10_000})
	exp := time.Now().Add(time.Minute)
	for i := range b.N {
		c.Seen(fmt.Sprint("msg_", i), exp)
	}
}
