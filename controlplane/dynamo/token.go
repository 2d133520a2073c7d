package dynamo

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// macBytes is the length of a page token's signature.
const macBytes = 16

// signToken returns the opaque page token continuing q after p: the
// position's text form, a dot and an HMAC-SHA256 (truncated to 16 bytes)
// over the position and the query's filters, so a client can neither
// forge a position nor carry a token to another query.
func (c *ControlPlane) signToken(q sortie.ListQuery, p controlplane.PageToken) string {
	pos := p.Encode()
	return pos + "." + base64.RawURLEncoding.EncodeToString(c.tokenMAC(q, pos))
}

func (c *ControlPlane) tokenMAC(q sortie.ListQuery, pos string) []byte {
	m := hmac.New(sha256.New, c.tokenKey)
	for _, part := range []string{"sortie.dynamo.page/v1", pos, q.ContextID, string(q.State), q.Agent} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	return m.Sum(nil)[:macBytes]
}

// verifyToken returns the position of a token made by signToken for the
// same query and key, nil for the first page, or a [*sortie.ValidationError]
// for field "page_token".
func (c *ControlPlane) verifyToken(q sortie.ListQuery) (*controlplane.PageToken, error) {
	if q.PageToken == "" {
		return nil, nil
	}
	pos, sig, ok := strings.Cut(q.PageToken, ".")
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(mac, c.tokenMAC(q, pos)) {
		return nil, sortie.Invalidf("page_token", "not a page token from List of this query (bad signature; tokens made without a shared PageTokenKey are good only on the handle that made them)")
	}
	return controlplane.DecodePageToken(pos)
}
