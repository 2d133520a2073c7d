package callback_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/callback"
)

// FuzzParseClaims feeds the claims parser arbitrary text, and the base64url
// of arbitrary JSON: it must never panic, must refuse with a validation
// error that does not quote its input, and must accept only claims that
// are valid and in canonical form.
func FuzzParseClaims(f *testing.F) {
	valid := callback.Claims{Version: 1, KeyID: "k1", RunID: sortie.NewRunID(time.UnixMilli(1)), Attempt: 2,
		LaunchID: "01jz-launch:1.a", ExpiresMs: 1_700_000_000_000}
	f.Add([]byte(valid.Encode()))
	for _, s := range []string{
		`{"v":1,"kid":"k1","run":"01ARZ3NDEKTSV4RRFFQ69G5FAV","att":1,"lid":"x","exp":1}`,
		`{"v":1,"kid":"k1","run":"01ARZ3NDEKTSV4RRFFQ69G5FAV","att":1,"lid":"x","exp":1,"v":1}`,
		`{"v":1.0,"kid":"","run":null,"att":-1,"lid":"\u0000","exp":-5}`,
		`[]`, `null`, `{"v":1e400}`, "", "....", "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	plain, err := base64.RawURLEncoding.DecodeString(valid.Encode())
	if err != nil {
		f.Fatal(err)
	}
	// The valid claims' JSON with data after it (the fuzz function also
	// tries the base64url of each input).
	for _, tail := range []string{"}", "]", " {}", "x", " \n"} {
		f.Add(append(plain[:len(plain):len(plain)], tail...))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, s := range []string{string(in), base64.RawURLEncoding.EncodeToString(in)} {
			c, err := callback.ParseClaims(s)
			if err != nil {
				if !errors.Is(err, sortie.ErrInvalidArgument) {
					t.Fatalf("ParseClaims(%q) = %v, want a validation error", s, err)
				}
				if len(s) >= 8 && strings.Contains(err.Error(), s) {
					t.Fatalf("ParseClaims error %q quotes its input", err)
				}
				continue
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("ParseClaims(%q) accepted %+v, which fails Validate: %v", s, c, err)
			}
			if enc := c.Encode(); enc != s {
				t.Fatalf("ParseClaims(%q) accepted a non-canonical form of %q", s, enc)
			}
		}
	})
}
