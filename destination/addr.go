package destination

import "net/netip"

// metadataAddrs are the cloud instance metadata services' addresses: AWS,
// GCP, Azure and OCI (169.254.169.254), AWS over IPv6 (fd00:ec2::254), the
// AWS ECS task metadata endpoint (169.254.170.2) and Alibaba Cloud
// (100.100.100.200).
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("169.254.170.2"),
	netip.MustParseAddr("100.100.100.200"),
}

// metadataNames are the host names of cloud metadata services, refused by
// name before any DNS lookup.
var metadataNames = []string{
	"metadata.google.internal",
	"metadata",
	"instance-data",
	"instance-data.ec2.internal",
	"metadata.azure.internal",
}

// specialRanges are the ranges refused by default that netip.Addr's
// methods do not name.
var specialRanges = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `in 0.0.0.0/8 ("this network")`},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (100.64.0.0/10, carrier-grade NAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved for IETF protocol assignments (192.0.0.0/24)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved for benchmarking (198.18.0.0/15)"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4)"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible IPv6 (::/96, deprecated)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64 local-use (64:ff9b:1::/48)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (fec0::/10, deprecated)"},
}

// Prefixes whose addresses embed an IPv4 address, checked as that address.
var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// classify says why a (unmapped, without zone) is refused by default, or
// returns "" for a public address.
func classify(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "not a valid address"
	case isMetadata(a):
		return "a cloud metadata address"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	}
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.why
		}
	}
	if !a.IsGlobalUnicast() {
		return "not a global unicast address"
	}
	return ""
}

func isMetadata(a netip.Addr) bool {
	for _, m := range metadataAddrs {
		if a == m {
			return true
		}
	}
	return false
}

// embeddedIPv4 returns the IPv4 address that a NAT64 (64:ff9b::/96) or
// 6to4 (2002::/16) address embeds.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case nat64Prefix.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}
