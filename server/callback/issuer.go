package callback

import (
	"fmt"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
)

// DefaultGrace is how long after an attempt's deadline its token is still
// accepted, so a worker stopping at its deadline can still finish.
const DefaultGrace = 5 * time.Minute

// IssuerOptions configures an [Issuer]. A nil *IssuerOptions means the
// defaults.
type IssuerOptions struct {
	// Grace is added to the attempt's deadline to give the token's expiry.
	// Optional; defaults to [DefaultGrace] (5 minutes).
	Grace time.Duration
}

// Issuer mints each attempt's callback report: it implements
// [sortie.ReportIssuer] (set it as sortie.EngineOptions.ReportIssuer).
// It is safe for concurrent use.
type Issuer struct {
	keys  *Keyring
	url   string
	grace time.Duration
}

var _ sortie.ReportIssuer = (*Issuer)(nil)

// NewIssuer returns an issuer of tokens under keys' primary key, whose
// reports send workers to baseURL + [PathPrefix] (baseURL is the host's
// public http(s) URL, e.g. "https://sortie.example.com"; a trailing slash
// is dropped). opts may be nil. It returns a [*sortie.ValidationError] for
// a nil keyring or a baseURL that is not an absolute http(s) URL without
// query or fragment.
func NewIssuer(keys *Keyring, baseURL string, opts *IssuerOptions) (*Issuer, error) {
	if keys == nil {
		return nil, sortie.Invalidf("keys", "a keyring is required")
	}
	if err := sortie.CheckBaseURL("base_url", baseURL); err != nil {
		return nil, err
	}
	i := &Issuer{keys: keys, url: strings.TrimRight(baseURL, "/") + PathPrefix, grace: DefaultGrace}
	if opts != nil && opts.Grace > 0 {
		i.grace = opts.Grace
	}
	return i, nil
}

// IssueReport implements [sortie.ReportIssuer]: a callback report whose
// token holds claims for inv's run, attempt and launch ID expiring at
// inv.DeadlineMs plus the grace, and the attempt secret derived from them
// under the primary key. It returns a [*sortie.ValidationError] naming the
// field when inv's run ID, attempt, launch ID or deadline is invalid.
func (i *Issuer) IssueReport(inv *sortie.Invocation) (sortie.Report, error) {
	if inv == nil {
		return sortie.Report{}, sortie.Invalidf("invocation", "is required")
	}
	if inv.DeadlineMs <= 0 {
		return sortie.Report{}, sortie.Invalidf("deadline_ms", "must be a positive Unix time in ms")
	}
	kid, key := i.keys.ring.PrimaryKey()
	c := Claims{Version: ClaimsVersion, KeyID: kid, RunID: inv.RunID, Attempt: inv.Attempt,
		LaunchID: inv.LaunchID, ExpiresMs: inv.DeadlineMs + i.grace.Milliseconds()}
	if err := checkClaims(c); err != nil {
		return sortie.Report{}, fmt.Errorf("issue report for run %s attempt %d: %w", inv.RunID, inv.Attempt, err)
	}
	enc := c.Encode()
	return sortie.Report{Mode: sortie.ReportCallback, CallbackURL: i.url, Token: token(enc, attemptSecret(key, enc))}, nil
}

// URL returns the callback URL the issuer hands workers: the base URL +
// [PathPrefix].
func (i *Issuer) URL() string { return i.url }
