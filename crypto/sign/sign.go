package sign

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
)

// Header names and the secret prefix of the Standard Webhooks spec.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
	SecretPrefix    = "whsec_"
)

// DefaultTolerance is how far a message's timestamp may be from the
// verifier's clock, either way.
const DefaultTolerance = 5 * time.Minute

// Limits, in bytes and counts.
const (
	minSecretBytes   = 24
	maxSecretBytes   = 64
	maxIDBytes       = 256
	maxSignatureList = 4 << 10
	maxSignatures    = 16
)

// Errors of Verify; each failure wraps exactly one.
var (
	// ErrMissingHeader: webhook-id, webhook-timestamp or webhook-signature
	// is absent or malformed.
	ErrMissingHeader = errors.New("missing or malformed webhook header")
	// ErrTimestamp: the timestamp is not within the tolerance of now (the
	// window is exclusive: a message exactly the tolerance old is
	// refused). The error also wraps [ErrStale] or [ErrFuture], which tell
	// the two sides apart.
	ErrTimestamp = errors.New("webhook timestamp outside the tolerance")
	// ErrStale: the timestamp is the tolerance or more before now: an old
	// message, or a sender whose clock is behind. It wraps [ErrTimestamp].
	ErrStale = fmt.Errorf("%w: too old", ErrTimestamp)
	// ErrFuture: the timestamp is the tolerance or more after now: a
	// sender whose clock is ahead. It wraps [ErrTimestamp].
	ErrFuture = fmt.Errorf("%w: in the future", ErrTimestamp)
	// ErrSignature: no signature matches any of the verifier's secrets.
	ErrSignature = errors.New("no valid webhook signature")
	// ErrReplay: a message with this ID was already accepted within the
	// tolerance. Senders redeliver with the same webhook-id when they did
	// not see the first answer (a timeout, a lost connection, a crash
	// before recording it), so for a receiver this means "already
	// processed": answer 2xx without processing it again, never 4xx
	// (which makes the sender retry until it gives up). [StatusOf] and
	// [Verifier.Middleware] do so.
	ErrReplay = errors.New("webhook message replayed")
	// ErrReplayCache: the replay cache could not tell whether the message
	// was accepted before (its store failed); the message is not accepted
	// and a sender may send it again.
	ErrReplayCache = errors.New("webhook replay cache unavailable")
)

// ParseSecret decodes a secret: "whsec_" followed by the standard base64
// of 24-64 random bytes (the prefix may be omitted). Errors are
// [*sortie.ValidationError]s that never show the secret.
func ParseSecret(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, SecretPrefix))
	if err != nil {
		return nil, sortie.Invalidf("secret", "must be %q followed by standard base64", SecretPrefix)
	}
	if len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return nil, sortie.Invalidf("secret", "%d bytes, want %d-%d", len(key), minSecretBytes, maxSecretBytes)
	}
	return key, nil
}

// NewSecret returns a new random secret of 32 bytes, "whsec_" + base64.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("sign: new secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

func parseSecrets(secrets []string) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, sortie.Invalidf("secrets", "at least one secret is required")
	}
	keys := make([][]byte, 0, len(secrets))
	for i, s := range secrets {
		k, err := ParseSecret(s)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i+1, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// checkID accepts 1-256 bytes of printable ASCII without spaces or '.',
// so "id.timestamp.body" splits one way only.
func checkID(id string) error {
	if id == "" || len(id) > maxIDBytes {
		return fmt.Errorf("%s must be 1-%d bytes: %w", HeaderID, maxIDBytes, ErrMissingHeader)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' || c == '.' {
			return fmt.Errorf("%s must be printable ASCII without spaces or '.': %w", HeaderID, ErrMissingHeader)
		}
	}
	return nil
}

// mac is HMAC-SHA256 over "id.timestamp.body".
func mac(key []byte, id string, ts int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(strconv.FormatInt(ts, 10)))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Signer signs messages with one or more secrets: during a rotation it
// signs with the old and the new secret, so verifiers holding either
// accept. It is safe for concurrent use.
type Signer struct {
	keys [][]byte
}

// NewSigner returns a signer with secrets (at least one; see
// [ParseSecret]).
func NewSigner(secrets ...string) (*Signer, error) {
	keys, err := parseSecrets(secrets)
	if err != nil {
		return nil, err
	}
	return &Signer{keys: keys}, nil
}

// Sign returns the webhook-signature value for the message: "v1,<base64>"
// for each secret, space-separated. id must be 1-256 bytes of printable
// ASCII without spaces or '.'.
func (s *Signer) Sign(id string, ts time.Time, body []byte) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	sigs := make([]string, len(s.keys))
	for i, k := range s.keys {
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac(k, id, ts.Unix(), body))
	}
	return strings.Join(sigs, " "), nil
}

// Header sets the three webhook headers of the message on h.
func (s *Signer) Header(h http.Header, id string, ts time.Time, body []byte) error {
	sig, err := s.Sign(id, ts, body)
	if err != nil {
		return err
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return nil
}
