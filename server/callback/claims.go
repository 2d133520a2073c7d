package callback

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// ClaimsVersion is the only claims version this release issues and reads.
const ClaimsVersion = 1

// MaxClaimsBytes is the longest encoded claims [ParseClaims] reads.
const MaxClaimsBytes = 1024

// secretContext separates attempt secrets from any other use of a host key.
const secretContext = "sortie.callback.v1"

var launchIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// Claims are what a callback token says about its bearer: the run,
// attempt and launch it may report for, the host key that issued it and
// when it expires. They travel in the clear (header [HeaderAttempt]) as
// the base64url (no padding) of their JSON; the attempt secret bound to
// them never travels after the invocation.
type Claims struct {
	Version  int          `json:"v"`
	KeyID    string       `json:"kid"`
	RunID    sortie.RunID `json:"run"`
	Attempt  int          `json:"att"`
	LaunchID string       `json:"lid"`
	// ExpiresMs is when the token stops being accepted, Unix ms.
	ExpiresMs int64 `json:"exp"`
}

// Encode returns the claims' text form: base64url (no padding) of their
// JSON in field order.
func (c Claims) Encode() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic("callback: marshal claims: " + err.Error()) // plain fields always marshal
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Validate checks every field and returns a [*sortie.ValidationError]
// naming it ("claims.run", "claims.att", ...).
func (c Claims) Validate() error {
	if c.Version != ClaimsVersion {
		return sortie.Invalidf("claims.v", "version %d is not supported (want %d)", c.Version, ClaimsVersion)
	}
	if !keyIDPattern.MatchString(c.KeyID) {
		return sortie.Invalidf("claims.kid", "must be 1-64 characters of A-Z, a-z, 0-9, '_' or '-'")
	}
	if c.RunID.Validate() != nil {
		return sortie.Invalidf("claims.run", "not a run ID (26-character ULID)")
	}
	if c.Attempt < 1 || c.Attempt > 100 {
		return sortie.Invalidf("claims.att", "%d outside 1..100", c.Attempt)
	}
	if !launchIDPattern.MatchString(c.LaunchID) {
		return sortie.Invalidf("claims.lid", "must be 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'")
	}
	if c.ExpiresMs <= 0 {
		return sortie.Invalidf("claims.exp", "must be a positive Unix time in ms")
	}
	return nil
}

// ParseClaims decodes and validates the text form of [Claims.Encode]. It
// accepts only the canonical form (the one Encode gives for the result),
// so one set of claims has exactly one text. Errors are
// [*sortie.ValidationError]s naming the field; none quotes the input.
func ParseClaims(s string) (Claims, error) {
	if s == "" || len(s) > MaxClaimsBytes {
		return Claims{}, sortie.Invalidf("claims", "%d bytes, want 1-%d", len(s), MaxClaimsBytes)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return Claims{}, sortie.Invalidf("claims", "not unpadded base64url")
	}
	var c Claims
	if err := strictjson.Unmarshal(b, &c); err != nil {
		return Claims{}, sortie.Invalidf("claims", "not a JSON object of the claims fields")
	}
	if err := c.Validate(); err != nil {
		return Claims{}, err
	}
	if c.Encode() != s {
		return Claims{}, sortie.Invalidf("claims", "not in canonical form")
	}
	return c, nil
}

// attemptSecret derives the secret bound to the encoded claims:
// HMAC-SHA256(key, "sortie.callback.v1" + claims), 32 bytes.
func attemptSecret(key []byte, claims string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(secretContext))
	m.Write([]byte(claims))
	return m.Sum(nil)
}

// token joins encoded claims and their attempt secret into the credential
// a worker receives: CLAIMS "." base64url(secret).
func token(claims string, secret []byte) string {
	return claims + "." + base64.RawURLEncoding.EncodeToString(secret)
}

// checkClaims is used where a field error must read as a claims error.
func checkClaims(c Claims) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("callback: claims: %w", err)
	}
	return nil
}
