package destination_test

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/sortie-run/sortie/destination"
)

// The zero Policy allows nothing; PublicHTTPS allows HTTPS to public
// addresses only; AllowAddrs opens a private range explicitly.
func ExamplePolicy_Check() {
	var closed destination.Policy
	fmt.Println(closed.Check("https://api.example.com/v1/hooks"))
	public := destination.PublicHTTPS()
	for _, u := range []string{
		"https://api.example.com/v1/hooks",
		"http://api.example.com/v1/hooks",
		"https://169.254.169.254/latest/meta-data/",
		"https://[::ffff:10.0.0.7]/internal?token=kept-out-of-errors",
		"https://metadata.google.internal/computeMetadata/v1/",
	} {
		fmt.Println(public.Check(u))
	}
	internal := destination.Policy{Allow: []string{destination.AnyHost}, AllowAddrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}}
	fmt.Println(internal.Check("https://10.0.0.7/internal"))
	err := public.Check("https://10.0.0.7/internal")
	var re *destination.RefusedError
	fmt.Println(errors.Is(err, destination.ErrRefused), errors.As(err, &re) && re.Host == "10.0.0.7")
	// Output:
	// destination: api.example.com refused: the destination policy allows no host (list it with the host's --allow-destination or SORTIE_ALLOW_DESTINATIONS, or * for any public host)
	// <nil>
	// destination: api.example.com refused: scheme http is not allowed (https only)
	// destination: 169.254.169.254 refused: address 169.254.169.254 is a cloud metadata address
	// destination: ::ffff:10.0.0.7 refused: address 10.0.0.7 is private
	// destination: metadata.google.internal refused: host metadata.google.internal is a cloud metadata service
	// <nil>
	// true true
}

// A client for a webhook receiver inside a VPC: only hooks.internal.example
// and its subdomains, on the 10.20.0.0/16 range.
func ExamplePolicy_Client() {
	p := destination.Policy{
		Allow:      []string{"hooks.internal.example", "*.hooks.internal.example"},
		AllowAddrs: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")},
	}
	client, err := p.Client()
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = client.Get("https://example.com/")
	fmt.Println(errors.Is(err, destination.ErrRefused))
	// Output:
	// true
}
