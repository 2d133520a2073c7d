package destination

import (
	"net/netip"
	"strings"

	"github.com/sortie-run/sortie"
)

// The environment variables of a policy, as workers (the CLI worker, the
// Lambda function, the Cloud Run container) read it and a host hands it to
// them.
const (
	// EnvAllow is [Policy.Allow], comma-separated; "*" allows any host.
	EnvAllow = "SORTIE_ALLOW_DESTINATIONS"
	// EnvAllowAddrs is [Policy.AllowAddrs], comma-separated CIDR ranges.
	EnvAllowAddrs = "SORTIE_ALLOW_DESTINATION_ADDRS"
	// EnvAllowHTTP is "1" when [Policy.AllowHTTP] is set.
	EnvAllowHTTP = "SORTIE_ALLOW_HTTP_DESTINATIONS"
)

// FromEnv returns the policy the variables [EnvAllow], [EnvAllowAddrs] and
// [EnvAllowHTTP] describe, as getenv returns them (os.Getenv); with none
// set, the zero Policy, which allows nothing. It returns a
// [*sortie.ValidationError] naming the variable that is malformed.
func FromEnv(getenv func(string) string) (*Policy, error) {
	p := &Policy{Allow: split(getenv(EnvAllow)), AllowHTTP: getenv(EnvAllowHTTP) == "1"}
	for _, a := range split(getenv(EnvAllowAddrs)) {
		pfx, err := netip.ParsePrefix(a)
		if err != nil {
			return nil, sortie.Invalidf(EnvAllowAddrs, "%q: want CIDR ranges such as 10.1.0.0/16", a)
		}
		p.AllowAddrs = append(p.AllowAddrs, pfx)
	}
	if v := getenv(EnvAllowHTTP); v != "" && v != "1" && v != "0" {
		return nil, sortie.Invalidf(EnvAllowHTTP, "%q: want 1 or 0", v)
	}
	if err := p.Validate(); err != nil {
		return nil, sortie.Invalidf(EnvAllow, "%v", err)
	}
	return p, nil
}

// Env returns p as the variables [FromEnv] reads (none for a nil or zero
// policy), for a worker's environment.
func (p *Policy) Env() []string {
	if p == nil {
		return nil
	}
	var out []string
	if len(p.Allow) > 0 {
		out = append(out, EnvAllow+"="+strings.Join(p.Allow, ","))
	}
	if len(p.AllowAddrs) > 0 {
		addrs := make([]string, len(p.AllowAddrs))
		for i, a := range p.AllowAddrs {
			addrs[i] = a.String()
		}
		out = append(out, EnvAllowAddrs+"="+strings.Join(addrs, ","))
	}
	if p.AllowHTTP {
		out = append(out, EnvAllowHTTP+"=1")
	}
	return out
}

// split returns the non-empty, trimmed items of a comma-separated list.
func split(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
