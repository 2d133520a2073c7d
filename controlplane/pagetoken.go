package controlplane

import (
	"encoding/base64"
	"encoding/json"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// Page sizes of [sortie.ControlPlane.List].
const (
	// DefaultPageSize is the page size when a query gives none.
	DefaultPageSize = 50
	// MaxPageSize is the largest page size a query may ask for.
	MaxPageSize = 1000
)

// PageToken is the position a List page continues from: the last run of the
// previous page. Lists are ordered newest first, by CreatedMs descending,
// then ID descending. Its text form (see [PageToken.Encode]) is opaque to
// clients.
type PageToken struct {
	// CreatedMs is the last run's creation time, Unix ms.
	CreatedMs int64 `json:"created_ms"`
	// ID is the last run's ID.
	ID sortie.RunID `json:"id"`
}

// TokenAfter returns the token that continues a list after run r.
func TokenAfter(r *sortie.Run) PageToken {
	return PageToken{CreatedMs: r.CreatedMs, ID: r.ID}
}

// Encode returns the token's opaque text form: base64url (no padding) of
// a small JSON object.
func (p PageToken) Encode() string {
	b, _ := json.Marshal(p) // two plain fields always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

// Follows reports whether a run created at createdMs with ID id comes after
// the token in newest-first order, that is, belongs to a later page.
func (p PageToken) Follows(createdMs int64, id sortie.RunID) bool {
	return createdMs < p.CreatedMs || (createdMs == p.CreatedMs && id < p.ID)
}

// DecodePageToken parses a token made by [PageToken.Encode]. It returns nil
// and no error for the empty string (the first page), and a
// [*sortie.ValidationError] for field "page_token" (which matches
// sortie.ErrInvalidArgument) for anything else that is not such a token.
func DecodePageToken(s string) (*PageToken, error) {
	return decodePosition(s, "List", func(p *PageToken) bool { return p.ID.Validate() == nil && p.CreatedMs >= 0 })
}

// decodePosition decodes an opaque position (base64url of JSON, no
// unknown fields, nothing after it) made by the Encode method of what
// from names; "" is the first page (nil, nil), and anything else that
// valid refuses is a [*sortie.ValidationError] for field "page_token".
func decodePosition[T any](s, from string, valid func(*T) bool) (*T, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > 1024 {
		return nil, sortie.Invalidf("page_token", "%d bytes, limit 1024", len(s))
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, sortie.Invalidf("page_token", "not a page token from %s: %v", from, err)
	}
	var p T
	if err := strictjson.Unmarshal(b, &p); err != nil {
		return nil, sortie.Invalidf("page_token", "not a page token from %s", from)
	}
	if !valid(&p) {
		return nil, sortie.Invalidf("page_token", "not a page token from %s: bad position", from)
	}
	return &p, nil
}

// PageSize returns the page size of q: [DefaultPageSize] when q gives none.
// Call q.Validate first; PageSize caps the result at [MaxPageSize].
func PageSize(q sortie.ListQuery) int {
	if q.PageSize <= 0 {
		return DefaultPageSize
	}
	return min(q.PageSize, MaxPageSize)
}
