package sealed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/sortie-run/sortie"
)

// Sealer seals and opens payloads; crypto/envelope's Config is the one to
// use. Its errors never contain a value.
type Sealer interface {
	// SealPayload seals value bound to run, agent and the object's key.
	SealPayload(ctx context.Context, run sortie.RunID, agent, key string, value []byte) ([]byte, error)
	// OpenPayload opens what SealPayload sealed with the same binding.
	OpenPayload(ctx context.Context, run sortie.RunID, agent, key string, sealed []byte) ([]byte, error)
}

// MaxPayloadBytes is the largest per-payload limit a store takes (1 GiB,
// the large envelope's limit): the ceiling of
// sortie.PayloadLimits.MaxPayloadBytes.
const MaxPayloadBytes = 1 << 30

// SlackBytes bounds what sealing adds to a value (label, header, IV and
// tag of a large envelope): an object is at most its value's size plus
// SlackBytes.
const SlackBytes = 16 << 10

// Key returns the object key of run's payload name: "runs/RUN/NAME".
func Key(run sortie.RunID, name string) string { return "runs/" + string(run) + "/" + name }

// Seal seals value as the object key of run (stored for agent) in the
// store named store, and returns the object and its reference: the
// value's size and the object's SHA-256. A bad reference is a
// [*sortie.ValidationError] naming field+"_ref".
func Seal(ctx context.Context, s Sealer, store string, run sortie.RunID, agent, key, field string, value []byte) ([]byte, *sortie.PayloadRef, error) {
	object, err := s.SealPayload(ctx, run, agent, key, value)
	if err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256(object)
	ref := &sortie.PayloadRef{Store: store, Key: key, Size: int64(len(value)), SHA256: hex.EncodeToString(sum[:])}
	if err := ref.Validate(field + "_ref"); err != nil {
		return nil, nil, err
	}
	return object, ref, nil
}

// CheckRef refuses a reference that is not to an object of run in the
// store named store, with [sortie.ErrPayloadIntegrity].
func CheckRef(store string, run sortie.RunID, ref *sortie.PayloadRef) error {
	if err := ref.Validate("payload_ref"); err != nil {
		return err
	}
	if ref.Store != store || !strings.HasPrefix(ref.Key, Key(run, "")) {
		return fmt.Errorf("payload %s in store %q: not an object of run %s in store %q: %w", ref.Key, ref.Store, run, store, sortie.ErrPayloadIntegrity)
	}
	return nil
}

// Missing is the error for the object ref names, of run, that its store
// does not hold (deleted or never written): [sortie.ErrPayloadIntegrity]
// naming the key and the SHA-256, as a changed object's error does.
func Missing(run sortie.RunID, ref *sortie.PayloadRef) error {
	return fmt.Errorf("payload %s of run %s (SHA-256 %s) is missing from store %q: %w", ref.Key, run, ref.SHA256, ref.Store, sortie.ErrPayloadIntegrity)
}

// Open checks object against ref, which names an object of run stored
// for agent, and opens it: an object over ref.Size+[SlackBytes], with
// another SHA-256, that does not open for run, agent and key, or whose
// value is not ref.Size bytes is refused with
// [sortie.ErrPayloadIntegrity]. It never opens an object whose hash
// differs.
func Open(ctx context.Context, s Sealer, run sortie.RunID, agent string, ref *sortie.PayloadRef, object []byte) ([]byte, error) {
	if n := int64(len(object)); n > ref.Size+SlackBytes {
		return nil, fmt.Errorf("payload %s: the stored object is %d bytes, more than its reference allows (%d): %w", ref.Key, n, ref.Size+SlackBytes, sortie.ErrPayloadIntegrity)
	}
	sum := sha256.Sum256(object)
	if got := hex.EncodeToString(sum[:]); got != ref.SHA256 {
		return nil, fmt.Errorf("payload %s of run %s: the stored object's SHA-256 is %s, the run's reference names %s (changed in the store): %w", ref.Key, run, got, ref.SHA256, sortie.ErrPayloadIntegrity)
	}
	value, err := s.OpenPayload(ctx, run, agent, ref.Key, object)
	if err != nil {
		return nil, fmt.Errorf("payload %s of run %s does not open: %v: %w", ref.Key, run, err, sortie.ErrPayloadIntegrity)
	}
	if int64(len(value)) != ref.Size {
		return nil, fmt.Errorf("payload %s of run %s: %d bytes, the reference names %d: %w", ref.Key, run, len(value), ref.Size, sortie.ErrPayloadIntegrity)
	}
	return value, nil
}
