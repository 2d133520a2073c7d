package main

import (
	"net/netip"
	"os"

	"github.com/spf13/pflag"

	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/host"
)

// destinationFlags is the destination policy of outbound calls (webhooks
// and the HTTP client handed to handlers), from flags or environment; the
// host hands the environment form to its worker subprocesses.
type destinationFlags struct {
	allow     []string
	addrs     []string
	allowHTTP bool
}

func (d *destinationFlags) register(f *pflag.FlagSet) {
	f.StringSliceVar(&d.allow, "allow-destination", envList(host.EnvAllowDestinations), "hosts outbound calls (webhooks, handlers' HTTP client) may reach, e.g. api.example.com or *.example.com, or '*' for any public host; none when empty: outbound calls are closed by default (env SORTIE_ALLOW_DESTINATIONS)")
	f.StringSliceVar(&d.addrs, "allow-destination-addrs", envList(host.EnvAllowDestinationAddrs), "address ranges outbound calls may reach although private, loopback or link-local, e.g. 10.1.0.0/16 (env SORTIE_ALLOW_DESTINATION_ADDRS)")
	f.BoolVar(&d.allowHTTP, "allow-http-destinations", os.Getenv(host.EnvAllowHTTPDestinations) == "1", "allow plain http outbound calls (env SORTIE_ALLOW_HTTP_DESTINATIONS=1)")
}

// policy builds the destination policy, naming the bad flag.
func (d *destinationFlags) policy() (*destination.Policy, error) {
	p := &destination.Policy{Allow: d.allow, AllowHTTP: d.allowHTTP}
	for _, a := range d.addrs {
		pfx, err := netip.ParsePrefix(a)
		if err != nil {
			return nil, usagef("--allow-destination-addrs %q: want a CIDR range such as 10.1.0.0/16: %v", a, err)
		}
		p.AllowAddrs = append(p.AllowAddrs, pfx)
	}
	if err := p.Validate(); err != nil {
		return nil, usagef("destination policy: %v", err)
	}
	return p, nil
}
