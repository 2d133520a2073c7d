package keyring_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/keyring"
)

// testRule is a kind of key whose values are strings; "" is refused.
var testRule = &keyring.Rule[string]{
	Kind:    "test key",
	ID:      regexp.MustCompile(`^[a-z0-9-]{1,16}$`),
	IDText:  "1-16 characters of a-z, 0-9 or '-'",
	MaxKeys: 3,
	Check: func(id, key string) error {
		if key == "" {
			return sortie.Invalidf("secret", "test key %s has no secret", id)
		}
		return nil
	},
}

func newRing(t *testing.T, id, key string) *keyring.Ring[string] {
	t.Helper()
	r, err := keyring.New(testRule, id, key)
	if err != nil {
		t.Fatalf("New(%q) = %v", id, err)
	}
	return r
}

// check fails t unless r holds exactly ids with primary.
func check(t *testing.T, r *keyring.Ring[string], primary string, ids ...string) {
	t.Helper()
	if r.Primary() != primary || cmp.Diff(ids, r.IDs()) != "" {
		t.Errorf("ring: primary %q, IDs %v; want %q and %v", r.Primary(), r.IDs(), primary, ids)
	}
}

// TestRotation walks the rotation every user of the ring follows.
func TestRotation(t *testing.T) {
	r := newRing(t, "old", "s-old")
	if err := r.Add("new", "s-new"); err != nil {
		t.Fatalf("Add(new) = %v", err)
	}
	if id, k := r.PrimaryKey(); id != "old" || k != "s-old" {
		t.Errorf("PrimaryKey() after Add = %q, %q; want old, s-old (Add keeps the primary)", id, k)
	}
	if err := r.SetPrimary("new"); err != nil {
		t.Fatalf("SetPrimary(new) = %v", err)
	}
	if id, k := r.PrimaryKey(); id != "new" || k != "s-new" {
		t.Errorf("PrimaryKey() after SetPrimary = %q, %q; want new, s-new", id, k)
	}
	if k, err := r.Key("old"); err != nil || k != "s-old" {
		t.Errorf("Key(old) while kept = %q, %v; want s-old", k, err)
	}
	if err := r.Remove("old"); err != nil {
		t.Fatalf("Remove(old) = %v", err)
	}
	if _, err := r.Key("old"); !errors.Is(err, keyring.ErrUnknownKey) {
		t.Errorf("Key(old) after Remove = %v, want ErrUnknownKey", err)
	}
	check(t, r, "new", "new")
}

// Every refused change is an error of the named kind and leaves the ring
// as it was.
func TestRefusedChangesLeaveTheRing(t *testing.T) {
	r := newRing(t, "a", "s-a")
	if err := r.Add("b", "s-b"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		err   error
		want  error
		field string // of the *sortie.ValidationError, when want is ErrInvalidArgument
		names string // what the message must name
	}{
		{"Add(bad ID)", r.Add("A/B", "s"), sortie.ErrInvalidArgument, "key_id", `"A/B"`},
		{"Add(long ID)", r.Add(strings.Repeat("x", 17), "s"), sortie.ErrInvalidArgument, "key_id", "1-16 characters"},
		{"Add(duplicate)", r.Add("a", "s-a2"), sortie.ErrInvalidArgument, "key_id", `"a"`},
		{"Add(refused key)", r.Add("c", ""), sortie.ErrInvalidArgument, "secret", "no secret"},
		{"SetPrimary(unknown)", r.SetPrimary("zz"), keyring.ErrUnknownKey, "", `"zz"`},
		{"Remove(unknown)", r.Remove("zz"), keyring.ErrUnknownKey, "", `"zz"`},
		{"Remove(primary)", r.Remove("a"), sortie.ErrInvalidArgument, "key_id", "primary"},
	} {
		if !errors.Is(tc.err, tc.want) || !strings.Contains(tc.err.Error(), tc.names) {
			t.Errorf("%s = %v, want %v naming %s", tc.name, tc.err, tc.want, tc.names)
		}
		var ve *sortie.ValidationError
		if tc.field != "" && (!errors.As(tc.err, &ve) || ve.Field != tc.field) {
			t.Errorf("%s = %v, want a ValidationError of field %q", tc.name, tc.err, tc.field)
		}
	}
	check(t, r, "a", "a", "b")
	if k, _ := r.Key("a"); k != "s-a" {
		t.Errorf("Key(a) after a refused duplicate = %q, want s-a", k)
	}
}

func TestUnknownKeyNamesTheIDAndTheHeldIDs(t *testing.T) {
	r := newRing(t, "k1", "s1")
	if err := r.Add("k2", "s2"); err != nil {
		t.Fatal(err)
	}
	_, err := r.Key("gone")
	if !errors.Is(err, keyring.ErrUnknownKey) || !strings.Contains(err.Error(), `key ID "gone"`) || !strings.Contains(err.Error(), `"k1", "k2"`) {
		t.Errorf(`Key("gone") = %v, want ErrUnknownKey naming "gone" and the held "k1", "k2"`, err)
	}
	if r.Has("gone") || !r.Has("k2") {
		t.Errorf("Has(gone), Has(k2) = %v, %v; want false, true", r.Has("gone"), r.Has("k2"))
	}
}

func TestLimitAndBadFirstKey(t *testing.T) {
	r := newRing(t, "k1", "s")
	for _, id := range []string{"k2", "k3"} {
		if err := r.Add(id, "s"); err != nil {
			t.Fatalf("Add(%s) = %v", id, err)
		}
	}
	var ve *sortie.ValidationError
	if err := r.Add("k4", "s"); !errors.As(err, &ve) || ve.Field != "keys" || !strings.Contains(err.Error(), "limit 3") {
		t.Errorf("Add(4th key) = %v, want a ValidationError of field keys naming limit 3", err)
	}
	if _, err := keyring.New(testRule, "", "s"); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf(`New("") = %v, want ErrInvalidArgument`, err)
	}
	if _, err := keyring.New(testRule, "k1", ""); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf(`New(k1, refused key) = %v, want ErrInvalidArgument`, err)
	}
	field := &keyring.Rule[string]{Kind: "k", ID: testRule.ID, IDText: testRule.IDText, Field: "keys.signers"}
	if _, err := keyring.New(field, "A", "s"); !errors.As(err, &ve) || ve.Field != "keys.signers" {
		t.Errorf("New(bad ID) with Field keys.signers = %v, want a ValidationError of that field", err)
	}
}

// Lookups during rotations never see a ring without its primary (run
// with -race).
func TestConcurrentRotation(t *testing.T) {
	r := newRing(t, "k0", "sk0")
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; i <= 50; i++ {
			id, prev := fmt.Sprint("k", i), fmt.Sprint("k", i-1)
			if err := r.Add(id, "s"+id); err != nil {
				t.Errorf("Add(%s) = %v", id, err)
				return
			}
			if err := r.SetPrimary(id); err != nil {
				t.Errorf("SetPrimary(%s) = %v", id, err)
			}
			if err := r.Remove(prev); err != nil {
				t.Errorf("Remove(%s) = %v", prev, err)
			}
		}
	})
	for range 4 {
		wg.Go(func() {
			for range 200 {
				id, k := r.PrimaryKey()
				if k != "s"+id {
					t.Errorf("PrimaryKey() = %q, %q; want the primary's own key", id, k)
					return
				}
			}
		})
	}
	wg.Wait()
	check(t, r, "k50", "k50")
}
