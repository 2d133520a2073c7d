package envelope_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie/crypto/envelope"
)

// runBinding is the binding of run n, attempt 1, of agent.
func runBinding(n int, agent string) envelope.Binding {
	b := binding
	b.RunID = fmt.Sprintf("01JRUN%020d", n)
	b.Agent = agent
	return b
}

func cached(c envelope.CacheOptions, now func() time.Time) *envelope.Options {
	return &envelope.Options{Cache: &c, Now: now}
}

// With the cache, one data key seals many runs of an agent and one
// unwrap opens them all; each envelope still opens for its own run only.
func TestCacheSharesDataKeysAcrossRuns(t *testing.T) {
	kek := localKEK(t, 1)
	host := envelope.New(ring(t, "k", kek), cached(envelope.CacheOptions{}, nil))
	worker := envelope.New(ring(t, "k", kek), cached(envelope.CacheOptions{}, nil))
	var sealed [][]byte
	for n := range 5 {
		sealed = append(sealed, seal(t, host, secret, runBinding(n, "probe")))
	}
	for n, s := range sealed {
		if got := open(t, worker, s, runBinding(n, "probe")); got != secret {
			t.Fatalf("Open(run %d) = %q, want %q", n, got, secret)
		}
		if _, err := worker.Open(bg, s, runBinding(n+1, "probe")); !errors.Is(err, envelope.ErrAuth) {
			t.Errorf("Open(run %d's envelope as run %d) = %v, want ErrAuth", n, n+1, err)
		}
	}
	if diff := cmp.Diff(envelope.Stats{GenerateDataKey: 1, CacheHits: 4}, host.Stats()); diff != "" {
		t.Errorf("host Stats() after 5 seals (-want +got):\n%s", diff)
	}
	if got := worker.Stats(); got.Decrypt != 1 {
		t.Errorf("worker Stats() after opening 5 envelopes = %+v, want 1 Decrypt", got)
	}
	if diff := cmp.Diff(map[string]any{"purpose": envelope.PurposeInvocation, "agent": "probe"}, fields(t, sealed[0])["ctx"]); diff != "" {
		t.Errorf("envelope context with the cache (-want +got):\n%s", diff)
	}
	if n := kek.Requests(); n != 2 {
		t.Errorf("KEK requests = %d, want 2 (one GenerateDataKey, one Decrypt)", n)
	}
}

func TestCacheBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     envelope.CacheOptions
		agents   []string
		advance  time.Duration
		wantGen  int64
		wantHits int64
	}{
		{"max uses", envelope.CacheOptions{MaxUses: 2}, []string{"a", "a", "a", "a", "a"}, 0, 3, 2},
		{"max age", envelope.CacheOptions{MaxAge: time.Minute}, []string{"a", "a", "a"}, time.Minute, 3, 0},
		{"below max age", envelope.CacheOptions{MaxAge: time.Minute}, []string{"a", "a", "a"}, 29 * time.Second, 1, 2},
		{"max entries", envelope.CacheOptions{MaxEntries: 2}, []string{"a", "b", "c", "a", "c"}, 0, 4, 1},
		{"per agent", envelope.CacheOptions{}, []string{"a", "b", "a", "b"}, 0, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1_700_000_000, 0)}
			k := envelope.New(ring(t, "k", localKEK(t, 1)), cached(tc.opts, clk.Now))
			for n, agent := range tc.agents {
				seal(t, k, secret, runBinding(n, agent))
				clk.Advance(tc.advance)
			}
			want := envelope.Stats{GenerateDataKey: tc.wantGen, CacheHits: tc.wantHits}
			if diff := cmp.Diff(want, k.Stats()); diff != "" {
				t.Errorf("Stats() after sealing for agents %v (-want +got):\n%s", tc.agents, diff)
			}
		})
	}
}

// A keeper opens what it sealed from the cache; Purge forgets the keys.
func TestCacheOpensOwnEnvelopesAndPurges(t *testing.T) {
	k := envelope.New(ring(t, "k", localKEK(t, 1)), cached(envelope.CacheOptions{}, nil))
	sealed := seal(t, k, secret, binding)
	open(t, k, sealed, binding)
	if got := k.Stats(); got.Decrypt != 0 {
		t.Errorf("Stats() after opening its own envelope = %+v, want no Decrypt", got)
	}
	k.Purge()
	open(t, k, sealed, binding)
	if got := k.Stats(); got.Decrypt != 1 {
		t.Errorf("Stats() after Purge and Open = %+v, want 1 Decrypt", got)
	}
}

// Removing a key from the ring refuses its envelopes even when their data
// key is cached.
func TestCacheDoesNotBypassTheRing(t *testing.T) {
	r := ring(t, "old", localKEK(t, 1))
	k := envelope.New(r, cached(envelope.CacheOptions{}, nil))
	sealed := seal(t, k, secret, binding)
	if err := r.Add("new", localKEK(t, 2)); err != nil {
		t.Fatal(err)
	}
	if err := r.SetPrimary("new"); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("old"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Open(bg, sealed, binding); !errors.Is(err, envelope.ErrUnknownKey) {
		t.Fatalf("Open after removing the key = %v, want ErrUnknownKey", err)
	}
}
