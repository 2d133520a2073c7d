package controlplane_test

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// withTail returns the token whose JSON is tok's followed by tail.
func withTail(t *testing.T, tok, tail string) string {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(append(b, tail...))
}

// Page tokens and push positions decode back to what was encoded, and a
// token whose JSON has anything but whitespace after it is refused as
// page_token: the stray "}" or "]" a dec.More check would let through, a
// second value, garbage.
func TestPositionsRefuseDataAfterTheJSON(t *testing.T) {
	id := sortie.NewRunID(time.UnixMilli(1_700_000_000_000))
	page := controlplane.PageToken{CreatedMs: 1_700_000_000_000, ID: id}
	push := controlplane.PushPosition{NextAttemptMs: 5, RunID: id, ID: "hook-1"}
	decoders := map[string]struct {
		tok    string
		decode func(string) (any, error)
		want   any
	}{
		"DecodePageToken": {page.Encode(), func(s string) (any, error) {
			p, err := controlplane.DecodePageToken(s)
			return deref(p), err
		}, page},
		"DecodePushPosition": {push.Encode(), func(s string) (any, error) {
			p, err := controlplane.DecodePushPosition(s)
			return deref(p), err
		}, push},
	}
	for name, d := range decoders {
		for _, tail := range []string{"", " \n"} {
			if got, err := d.decode(withTail(t, d.tok, tail)); err != nil || got != d.want {
				t.Errorf("%s(token + %q) = %+v, %v; want %+v", name, tail, got, err, d.want)
			}
		}
		for _, tail := range []string{"}", "]", " {}", "x", "\x00"} {
			_, err := d.decode(withTail(t, d.tok, tail))
			var ve *sortie.ValidationError
			if !errors.As(err, &ve) || ve.Field != "page_token" {
				t.Errorf("%s(token + %q) = %v, want a ValidationError of page_token", name, tail, err)
			}
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
