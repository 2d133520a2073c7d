package a2a

import (
	"context"
	"encoding/json"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/server/push"
)

// MaxTokenBytes is the longest A2A push token a configuration may carry,
// in bytes: what the push dispatcher sends.
const MaxTokenBytes = push.MaxTokenBytes

// Binding of the envelopes [EnvelopeSealer] makes.
const (
	// PurposePushToken is the purpose of a push token's envelope; it is in
	// the key-management context, so a key policy can keep workers (whose
	// purpose is envelope.PurposeInvocation) from opening one.
	PurposePushToken = "a2a-push-token"
	// pushTokenVersion takes the binding's version field.
	pushTokenVersion = "sortie.a2a-push-token/v1"
	// pushTokenAgent prefixes the configuration ID in the binding's agent
	// field.
	pushTokenAgent = "push-config/"
)

// TokenSealer seals the tokens of A2A push configurations for storage,
// and opens them for delivery. Implementations bind each sealed token to
// its run and configuration ID (as associated data), so a sealed token
// copied to another configuration does not open. Errors MUST NOT contain
// the token.
type TokenSealer interface {
	// SealToken returns token sealed for configuration configID of run:
	// JSON of at most [sortie.MaxSealedTokenBytes] bytes for a token of
	// at most [MaxTokenBytes].
	SealToken(ctx context.Context, run sortie.RunID, configID string, token []byte) (json.RawMessage, error)
	// OpenToken returns the token SealToken sealed for configID of run,
	// and an error for anything else (another run or configuration, a
	// change). An error wrapping sortie.ErrUnavailable says a retry may
	// succeed.
	OpenToken(ctx context.Context, run sortie.RunID, configID string, sealed json.RawMessage) ([]byte, error)
}

// EnvelopeSealer returns a [TokenSealer] over k, the host's envelope
// keeper: AES-256-GCM under a data key wrapped by the keyring's primary
// key (crypto/envelope). The binding is run ID, attempt 0, purpose
// [PurposePushToken], agent "push-config/" + the configuration ID and
// version "sortie.a2a-push-token/v1": all in the associated data; the
// key-management context holds purpose and agent (and run ID and attempt
// unless k caches data keys). Errors are those of envelope.Keeper's Seal
// and Open, which never contain plaintext.
func EnvelopeSealer(k *envelope.Keeper) TokenSealer { return envelopeSealer{k} }

type envelopeSealer struct{ k *envelope.Keeper }

func tokenBinding(run sortie.RunID, configID string) envelope.Binding {
	return envelope.Binding{RunID: string(run), InvocationVersion: pushTokenVersion,
		Purpose: PurposePushToken, Agent: pushTokenAgent + configID}
}

func (s envelopeSealer) SealToken(ctx context.Context, run sortie.RunID, configID string, token []byte) (json.RawMessage, error) {
	return s.k.Seal(ctx, token, tokenBinding(run, configID))
}

func (s envelopeSealer) OpenToken(ctx context.Context, run sortie.RunID, configID string, sealed json.RawMessage) ([]byte, error) {
	return s.k.Open(ctx, sealed, tokenBinding(run, configID))
}

// TokenOpener returns the push dispatcher's token opener
// (push.Options.OpenToken) over s: it opens a configuration's SealedToken
// bound to its run and ID, returning s's error as it is (the dispatcher
// names the configuration).
func TokenOpener(s TokenSealer) func(ctx context.Context, cfg *sortie.PushConfig) (string, error) {
	return func(ctx context.Context, cfg *sortie.PushConfig) (string, error) {
		pt, err := s.OpenToken(ctx, cfg.RunID, cfg.ID, cfg.SealedToken)
		if err != nil {
			return "", err
		}
		defer clear(pt)
		return string(pt), nil
	}
}

// PushFormats returns the push message formats this package renders, for
// the host's push dispatcher (push.Options.Formats): [sortie.PushFormatA2A],
// the format of every configuration set through A2A, renders
// [PushMessage].
func PushFormats() map[string]func(run *sortie.Run) (any, error) {
	return map[string]func(*sortie.Run) (any, error){sortie.PushFormatA2A: PushMessage}
}

// PushMessage returns the A2A push notification body of run: a
// StreamResponse holding the run as a task, exactly as GetTask returns it
// without a history length ({"task": {...}}, which a2a-go decodes as
// a2a.StreamResponse).
func PushMessage(run *sortie.Run) (any, error) {
	return a2a.StreamResponse{Event: task(run, nil)}, nil
}
