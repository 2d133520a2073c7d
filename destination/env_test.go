package destination

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sortie-run/sortie"
)

func getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestEnvRoundTrip(t *testing.T) {
	want := &Policy{Allow: []string{"*", "api.example.com"}, AllowAddrs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, AllowHTTP: true}
	vars := map[string]string{}
	for _, kv := range want.Env() {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	got, err := FromEnv(getenv(vars))
	if err != nil {
		t.Fatalf("FromEnv(%v) = %v", vars, err)
	}
	if d := cmp.Diff(want, got, cmpopts.EquateComparable(netip.Prefix{})); d != "" {
		t.Errorf("FromEnv(Env()) (-want +got):\n%s", d)
	}
	zero, err := FromEnv(getenv(nil))
	if err != nil || len(zero.Allow) != 0 || zero.Check("https://api.example.com/") == nil {
		t.Errorf("FromEnv(nothing set) = %+v, %v; want the zero policy, which refuses everything", zero, err)
	}
}

func TestFromEnvNamesTheBadVariable(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		EnvAllowAddrs: {EnvAllowAddrs: "10.1.0.0"},
		EnvAllowHTTP:  {EnvAllowHTTP: "yes"},
		EnvAllow:      {EnvAllow: "https://api.example.com"},
	} {
		var ve *sortie.ValidationError
		if _, err := FromEnv(getenv(vars)); !errors.As(err, &ve) || ve.Field != name {
			t.Errorf("FromEnv(%v) = %v, want a ValidationError naming %s", vars, err, name)
		}
	}
}
