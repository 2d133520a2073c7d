package controlplane

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/sortie-run/sortie"
)

// MinPageTokenKeyBytes is the shortest page-token key [NewPageTokens] takes.
const MinPageTokenKeyBytes = 16

// Labels of the positions [PageTokens] signs, so a token of one kind is
// never taken for another.
const (
	listLabel = "sortie.page/v1"
	// PushPageLabel labels PendingPushConfigs positions.
	PushPageLabel = "sortie.push-page/v1"
)

// PageTokens makes and checks a store's opaque page tokens: a position,
// the ID of the page-token key that signed it and an HMAC-SHA256 of both
// and the query's filters (truncated to 16 bytes), each part base64url
// and joined by dots. Every handle of one deployment (every process that
// serves its clients) signs with the same key, so a token made by one is
// taken by the others; a token signed with another key is refused naming
// both key IDs, one altered or carried to another query as not a token of
// this query. The zero value is not usable; it is safe for concurrent use.
type PageTokens struct {
	key []byte
	kid string
}

// NewPageTokens returns the page tokens of key, at least
// [MinPageTokenKeyBytes] bytes (a [*sortie.ValidationError] for field
// "page_token_key" otherwise), or of 32 random bytes when key is nil:
// then a token is good only on this value.
func NewPageTokens(key []byte) (*PageTokens, error) {
	if key == nil {
		key = make([]byte, 32)
		rand.Read(key)
	} else if len(key) < MinPageTokenKeyBytes {
		return nil, sortie.Invalidf("page_token_key", "%d bytes, want at least %d", len(key), MinPageTokenKeyBytes)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("sortie.page-token-key-id"))
	return &PageTokens{key: key, kid: base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:6])}, nil
}

// KeyID names the key: 8 base64url characters derived from it (not
// secret; it tells deployments apart).
func (p *PageTokens) KeyID() string { return p.kid }

// Sign returns the token of position pos (base64url text) under label,
// bound to the query filters parts.
func (p *PageTokens) Sign(label, pos string, parts ...string) string {
	return pos + "." + p.kid + "." + base64.RawURLEncoding.EncodeToString(p.mac(label, pos, parts))
}

func (p *PageTokens) mac(label, pos string, parts []string) []byte {
	m := hmac.New(sha256.New, p.key)
	for _, s := range append([]string{label, p.kid, pos}, parts...) {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return m.Sum(nil)[:16]
}

// Open returns the position of a token made by Sign with the same label,
// key and parts; from names the call for errors ("List"). Errors are
// [*sortie.ValidationError]s for field "page_token".
func (p *PageTokens) Open(label, from, token string, parts ...string) (string, error) {
	pos, rest, ok := strings.Cut(token, ".")
	kid, sig, ok2 := strings.Cut(rest, ".")
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	switch {
	case !ok || !ok2 || err != nil:
		return "", sortie.Invalidf("page_token", "not a page token from %s", from)
	case kid != p.kid:
		return "", sortie.Invalidf("page_token", "a page token from another deployment: signed with page-token key %s, this store's is %s (every host and process of a deployment needs the same page-token key, SORTIE_PAGE_TOKEN_KEY)", clip(kid), p.kid)
	case !hmac.Equal(mac, p.mac(label, pos, parts)):
		return "", sortie.Invalidf("page_token", "not a page token of this query from %s (altered, or made for other filters)", from)
	}
	return pos, nil
}

// clip shortens what a client sent for an error message.
func clip(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}

// ListToken returns the token of the List page after run r for query q.
func (p *PageTokens) ListToken(q sortie.ListQuery, r *sortie.Run) string {
	return p.Sign(listLabel, TokenAfter(r).Encode(), listParts(q)...)
}

// ListPosition returns the position q.PageToken continues from: nil for
// the first page, or a [*sortie.ValidationError] for field "page_token".
func (p *PageTokens) ListPosition(q sortie.ListQuery) (*PageToken, error) {
	if q.PageToken == "" {
		return nil, nil
	}
	pos, err := p.Open(listLabel, "List", q.PageToken, listParts(q)...)
	if err != nil {
		return nil, err
	}
	return DecodePageToken(pos)
}

func listParts(q sortie.ListQuery) []string { return []string{q.ContextID, string(q.State), q.Agent} }
