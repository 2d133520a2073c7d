package envelope

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/keyring"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// FormatVersion is the envelope format version this package writes and
// reads; see the package documentation for the layout.
const FormatVersion = 1

// Size limits, in bytes.
const (
	// MaxPlaintextBytes is the largest plaintext Seal takes. Its envelope
	// stays under [MaxSealedBytes], and so under the 64 KiB limit of
	// [sortie.Invocation.SealedConfig].
	MaxPlaintextBytes = 40 << 10
	// MaxSealedBytes is the largest envelope Open reads.
	MaxSealedBytes = 64 << 10
	// maxWrappedBytes bounds a wrapped data key (AWS KMS: about 184 bytes).
	maxWrappedBytes = 2 << 10
	// maxContextValueBytes bounds a binding or context value.
	maxContextValueBytes = 256
)

// aadLabel starts the associated data of every envelope, so it can never
// be mistaken for the associated data of another protocol.
const aadLabel = "sortie.envelope/v1"

// Errors of Open. Every failure of Open wraps exactly one of them, or, for
// a failure of the key-management service, that service's error.
var (
	// ErrMalformed: the envelope is not one this package wrote: not JSON,
	// unknown fields or format version, a field missing or over its limit.
	ErrMalformed = errors.New("malformed envelope")
	// ErrUnknownKey: the envelope's key ID is not in the keyring. It is
	// [keyring.ErrUnknownKey], so one errors.Is test serves every ring.
	ErrUnknownKey = keyring.ErrUnknownKey
	// ErrBinding: the envelope's key-management context names another
	// purpose, agent, run or attempt than the one Open was given.
	ErrBinding = errors.New("envelope bound to another context")
	// ErrAuth: authentication failed: the envelope was tampered with, or
	// it is bound to another run, attempt, invocation version or key.
	ErrAuth = errors.New("envelope authentication failed")
)

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// envelope is the stored form; see the package documentation.
type envelope struct {
	V   int               `json:"v"`
	KID string            `json:"kid"`
	Ctx map[string]string `json:"ctx"`
	DK  []byte            `json:"dk"`
	CT  []byte            `json:"ct"`
}

// decode parses and checks an envelope; every failure wraps ErrMalformed.
func decode(b []byte) (*envelope, error) {
	if len(b) > MaxSealedBytes {
		return nil, fmt.Errorf("open envelope: %d bytes, limit %d: %w", len(b), MaxSealedBytes, ErrMalformed)
	}
	var e envelope
	if err := strictjson.Unmarshal(b, &e); errors.Is(err, strictjson.ErrTrailingData) {
		return nil, fmt.Errorf("open envelope: data after the envelope object: %w", ErrMalformed)
	} else if err != nil {
		return nil, fmt.Errorf("open envelope: not an envelope object: %w", ErrMalformed)
	}
	if err := e.check(); err != nil {
		return nil, fmt.Errorf("open envelope: %v: %w", err, ErrMalformed)
	}
	return &e, nil
}

func (e *envelope) check() error {
	switch {
	case e.V != FormatVersion:
		return fmt.Errorf("format version %d is not supported (want %d)", e.V, FormatVersion)
	case !keyIDPattern.MatchString(e.KID):
		return errors.New("kid must be 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'")
	case len(e.DK) == 0 || len(e.DK) > maxWrappedBytes:
		return fmt.Errorf("dk is %d bytes, want 1-%d", len(e.DK), maxWrappedBytes)
	case len(e.CT) < ivBytes+tagBytes:
		return fmt.Errorf("ct is %d bytes, want at least %d", len(e.CT), ivBytes+tagBytes)
	case len(e.Ctx) > 8:
		return fmt.Errorf("ctx has %d entries, limit 8", len(e.Ctx))
	}
	for k, v := range e.Ctx {
		if len(k) > 64 || len(v) > maxContextValueBytes || !utf8.ValidString(k+v) {
			return errors.New("ctx entries must be UTF-8, keys at most 64 and values at most 256 bytes")
		}
	}
	return nil
}

// Binding is what an envelope is bound to. Open must be given the binding
// Seal was given; any difference fails.
type Binding struct {
	// RunID is the run the sealed data belongs to. Required.
	RunID string
	// Attempt is the attempt it is sealed for; 0 binds it to the run as a
	// whole (the copy the engine keeps at rest).
	Attempt int
	// InvocationVersion is the worker protocol version, for example
	// [sortie.InvocationVersion]. Required.
	InvocationVersion string
	// Purpose says what the data is for, for example [PurposeInvocation].
	// It is sent to the key-management service. Required.
	Purpose string
	// Agent names the run's agent. It is sent to the key-management
	// service. Required.
	Agent string
	// Subject names what in the run the data is, for example a step's
	// name ([PurposeStep]); bound by the associated data only, never sent
	// to the key-management service. Optional.
	Subject string
}

// Validate checks the binding's fields and returns a
// [*sortie.ValidationError] naming the field.
func (b Binding) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"binding.run_id", b.RunID}, {"binding.invocation_version", b.InvocationVersion},
		{"binding.purpose", b.Purpose}, {"binding.agent", b.Agent},
	} {
		if f.v == "" || len(f.v) > maxContextValueBytes || !utf8.ValidString(f.v) {
			return sortie.Invalidf(f.name, "must be 1-%d bytes of UTF-8", maxContextValueBytes)
		}
	}
	if b.Attempt < 0 || b.Attempt > 1000 {
		return sortie.Invalidf("binding.attempt", "%d outside 0..1000", b.Attempt)
	}
	if len(b.Subject) > maxContextValueBytes || !utf8.ValidString(b.Subject) {
		return sortie.Invalidf("binding.subject", "must be at most %d bytes of UTF-8", maxContextValueBytes)
	}
	return nil
}

// Keys of the key-management context.
const (
	ctxPurpose = "purpose"
	ctxAgent   = "agent"
	ctxRunID   = "run_id"
	ctxAttempt = "attempt"
)

// kmsContext is the encryption context sent to the key-management
// service: purpose and agent, and also run ID and attempt when the data
// key is not shared through the cache.
func kmsContext(b Binding, shared bool) map[string]string {
	ec := map[string]string{ctxPurpose: b.Purpose, ctxAgent: b.Agent}
	if !shared {
		ec[ctxRunID] = b.RunID
		ec[ctxAttempt] = strconv.Itoa(b.Attempt)
	}
	return ec
}

// checkContext checks that an envelope's context is one of the two that b
// gives (with or without run ID and attempt); errors name the envelope's
// key ID kid and its context keys.
func checkContext(kid string, ec map[string]string, b Binding) error {
	want := kmsContext(b, len(ec) <= 2)
	for _, k := range []string{ctxPurpose, ctxAgent, ctxRunID, ctxAttempt} {
		if w, ok := want[k]; ok && ec[k] != w {
			return fmt.Errorf("open envelope of key %q, context keys %s: its context has %s %q, want %q: %w", kid, contextKeys(ec), k, ec[k], w, ErrBinding)
		}
	}
	if len(ec) != len(want) {
		return fmt.Errorf("open envelope of key %q, context keys %s: %d entries, want %d (purpose, agent[, run_id, attempt]): %w", kid, contextKeys(ec), len(ec), len(want), ErrBinding)
	}
	return nil
}

// contextKeys names the keys of an encryption context, sorted and
// bracketed ("[agent purpose]"); the values stay out of errors.
func contextKeys(ec map[string]string) string {
	return fmt.Sprint(slices.Sorted(maps.Keys(ec)))
}

// associatedData is the data-key layer's associated data: the format,
// the key ID, the context and every field of the binding.
func associatedData(kid string, ec map[string]string, b Binding) []byte {
	ad := appendField(nil, aadLabel)
	ad = appendField(ad, kid)
	ad = appendField(ad, string(EncodeContext(ec)))
	ad = appendField(ad, b.RunID)
	ad = appendField(ad, strconv.Itoa(b.Attempt))
	ad = appendField(ad, b.InvocationVersion)
	ad = appendField(ad, b.Purpose)
	ad = appendField(ad, b.Agent)
	if b.Subject != "" { // absent from envelopes made before the field
		ad = appendField(ad, b.Subject)
	}
	return ad
}
