package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/internal/strictjson"
	"github.com/sortie-run/sortie/server/push"
)

// destinationFlags is the destination policy of outbound calls (webhooks
// and the HTTP client handed to handlers), from flags or environment; the
// local launcher hands the environment form to its workers.
type destinationFlags struct {
	allow     []string
	addrs     []string
	allowHTTP bool
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

// env is the policy in the environment variables workers read.
func (d *destinationFlags) env() []string {
	var out []string
	if len(d.allow) > 0 {
		out = append(out, "SORTIE_ALLOW_DESTINATIONS="+strings.Join(d.allow, ","))
	}
	if len(d.addrs) > 0 {
		out = append(out, "SORTIE_ALLOW_DESTINATION_ADDRS="+strings.Join(d.addrs, ","))
	}
	if d.allowHTTP {
		out = append(out, "SORTIE_ALLOW_HTTP_DESTINATIONS=1")
	}
	return out
}

func envList(k string) []string {
	if v := os.Getenv(k); v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

// webhookKeysFile is the state directory's webhook signing keys, created
// (mode 0600) on first use: {"primary": ID, "keys": {ID: ["whsec_..."]}}.
type webhookKeysFile struct {
	Primary string              `json:"primary"`
	Keys    map[string][]string `json:"keys"`
}

// webhookKeys loads path, creating it with one fresh key when missing.
func webhookKeys(path string) (push.Keys, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		secret, serr := sign.NewSecret()
		if serr != nil {
			return push.Keys{}, serr
		}
		b, _ = json.MarshalIndent(webhookKeysFile{Primary: "k1", Keys: map[string][]string{"k1": {secret}}}, "", "  ")
		if err = os.WriteFile(path, b, 0o600); err != nil {
			return push.Keys{}, fmt.Errorf("create webhook keys %s: %w", path, err)
		}
	} else if err != nil {
		return push.Keys{}, fmt.Errorf("read webhook keys: %w", err)
	}
	var f webhookKeysFile
	if err := strictjson.Unmarshal(b, &f); err != nil {
		return push.Keys{}, usagef("webhook keys %s: %v", filepath.Base(path), err)
	}
	k, err := push.SecretKeys(f.Primary, f.Keys)
	if err != nil {
		return push.Keys{}, usagef("webhook keys %s: %v", filepath.Base(path), err)
	}
	return k, nil
}
