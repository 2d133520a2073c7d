package controlplane_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
)

// A token continues on every holder of the same key, is refused naming
// both key IDs by a holder of another key, and refused as not this
// query's when altered or carried to other filters.
func TestPageTokens(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	a, _ := controlplane.NewPageTokens(key)
	b, _ := controlplane.NewPageTokens(append([]byte(nil), key...))
	other, _ := controlplane.NewPageTokens(nil)
	if a.KeyID() != b.KeyID() || a.KeyID() == other.KeyID() || len(a.KeyID()) != 8 {
		t.Errorf("key IDs %q, %q (same key), %q (random), want the first two equal, the third different, 8 characters", a.KeyID(), b.KeyID(), other.KeyID())
	}
	run := controlplanetest.NewRun(controlplanetest.T0)
	q := sortie.ListQuery{State: sortie.StateFailed, Agent: "probe", PageToken: a.ListToken(sortie.ListQuery{State: sortie.StateFailed, Agent: "probe"}, run)}
	pos, err := b.ListPosition(q)
	if err != nil || pos.ID != run.ID || pos.CreatedMs != run.CreatedMs {
		t.Fatalf("ListPosition on a holder of the same key = %+v, %v, want the run's position", pos, err)
	}
	for name, tc := range map[string]struct {
		p    *controlplane.PageTokens
		q    sortie.ListQuery
		want string
	}{
		"another key":   {other, q, "another deployment"},
		"another state": {b, sortie.ListQuery{State: sortie.StateCompleted, Agent: "probe", PageToken: q.PageToken}, "not a page token of this query"},
		"edited":        {b, sortie.ListQuery{State: sortie.StateFailed, Agent: "probe", PageToken: "x" + q.PageToken[1:]}, "not a page token of this query"},
		"no key ID":     {b, sortie.ListQuery{PageToken: "abc"}, "not a page token from List"},
	} {
		_, err := tc.p.ListPosition(tc.q)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "page_token" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ListPosition(%s) = %v, want a ValidationError of page_token saying %q", name, err, tc.want)
		}
	}
	if _, err := other.ListPosition(q); !strings.Contains(err.Error(), a.KeyID()) || !strings.Contains(err.Error(), other.KeyID()) {
		t.Errorf("ListPosition(another key) = %v, want both key IDs named", err)
	}
	if _, err := controlplane.NewPageTokens([]byte("short")); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("NewPageTokens(5 bytes) = %v, want ErrInvalidArgument", err)
	}
}
