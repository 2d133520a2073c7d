package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/sortie-run/sortie"
)

// Headers of a delivery to a configuration with a sealed token: the
// token, opened by [Options.OpenToken], goes in both. The A2A
// specification does not name the header; a2a-go (a2asrv/push) sends and
// reads TokenHeader, the Python a2a-sdk TokenHeaderPrefixed.
const (
	TokenHeader         = "A2A-Notification-Token"
	TokenHeaderPrefixed = "X-A2A-Notification-Token"
)

// MaxTokenBytes is the longest token [Options.OpenToken] may return, in
// bytes.
const MaxTokenBytes = 1024

// permanent is a delivery failure that no retry cures: the configuration
// ends with it.
type permanent struct{ msg string }

func (p *permanent) Error() string { return p.msg }

// checkFormats refuses a renderer for the built-in format and a nil one.
func checkFormats(f map[string]func(*sortie.Run) (any, error)) error {
	for _, name := range slices.Sorted(maps.Keys(f)) {
		switch {
		case name == "" || name == sortie.PushFormatSortie:
			return sortie.Invalidf("formats", "%q is the built-in run payload; it cannot be replaced", name)
		case f[name] == nil:
			return sortie.Invalidf("formats", "format %q has no renderer", name)
		}
	}
	return nil
}

// unsupported says why this dispatcher cannot deliver to cfg at all, or
// "" when it can: a format without a renderer, or a sealed token without
// a token opener.
func (d *Dispatcher) unsupported(cfg *sortie.PushConfig) string {
	if _, ok := d.o.Formats[cfg.Format]; !ok && cfg.Format != "" && cfg.Format != sortie.PushFormatSortie {
		return fmt.Sprintf("unknown push format %q: this host renders %s", cfg.Format, strings.Join(d.formatNames(), ", "))
	}
	if len(cfg.SealedToken) > 0 && d.o.OpenToken == nil {
		return "the configuration has a sealed token and this host has no token opener"
	}
	return ""
}

// formatNames lists the formats this dispatcher renders, quoted, sorted.
func (d *Dispatcher) formatNames() []string {
	names := []string{fmt.Sprintf("%q", sortie.PushFormatSortie)}
	for _, n := range slices.Sorted(maps.Keys(d.o.Formats)) {
		names = append(names, fmt.Sprintf("%q", n))
	}
	return names
}

// body is the message of j in its configuration's format, sent at nowMs:
// the run payload, or what the format's renderer returns, as JSON. A
// renderer's failure is an ordinary failure (a later version of the run
// may render).
func (d *Dispatcher) body(j job, nowMs int64) ([]byte, error) {
	render, ok := d.o.Formats[j.cfg.Format]
	if !ok {
		return encode(j.pub, nowMs)
	}
	v, err := render(j.run.Clone())
	if err != nil {
		return nil, fmt.Errorf("render run %s version %d as %q: %w", j.run.ID, j.run.Version, j.cfg.Format, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode run %s version %d as %q: %w", j.run.ID, j.run.Version, j.cfg.Format, err)
	}
	return b, nil
}

// setToken opens cfg's sealed token, if it has one, into the token
// headers of req. The plaintext lives in req's headers only. A failure
// wrapping sortie.ErrUnavailable or a context error is retried; any other
// ends the configuration.
func (d *Dispatcher) setToken(ctx context.Context, req *http.Request, cfg *sortie.PushConfig) error {
	if len(cfg.SealedToken) == 0 {
		return nil
	}
	tok, err := d.o.OpenToken(ctx, cfg)
	switch {
	case err != nil && (errors.Is(err, sortie.ErrUnavailable) || ctx.Err() != nil):
		return fmt.Errorf("open the push token: %w", err)
	case err != nil:
		return &permanent{"open the push token: " + err.Error()}
	case !ValidToken(tok):
		return &permanent{fmt.Sprintf("the opened push token is not 1-%d bytes of visible ASCII and spaces", MaxTokenBytes)}
	}
	req.Header.Set(TokenHeader, tok)
	req.Header.Set(TokenHeaderPrefixed, tok)
	return nil
}

// ValidToken reports whether tok is 1-[MaxTokenBytes] bytes of visible
// ASCII and inner spaces: a header value no HTTP stack rewrites.
func ValidToken(tok string) bool {
	if tok == "" || len(tok) > MaxTokenBytes || tok[0] == ' ' || tok[len(tok)-1] == ' ' {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < ' ' || tok[i] > '~' {
			return false
		}
	}
	return true
}
