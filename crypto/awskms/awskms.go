package awskms

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
)

// API is the part of the AWS KMS client a [KEK] uses; *kms.Client
// implements it.
type API interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, optFns ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// KEK is an [envelope.KEK] held by AWS KMS: one symmetric KMS key. It is
// safe for concurrent use.
type KEK struct {
	api      API
	keyID    string
	requests atomic.Int64
}

var _ envelope.KEK = (*KEK)(nil)

// New returns a KEK of the KMS key keyID (a key ARN, key ID, alias name
// "alias/NAME" or alias ARN) called through api. Prefer a key ARN for a
// key kept for decryption during rotation: Decrypt names the key, and an
// alias later pointed at another key would refuse the older envelopes.
func New(api API, keyID string) (*KEK, error) {
	if api == nil {
		return nil, errors.New("awskms: New with a nil API")
	}
	if keyID == "" || len(keyID) > 2048 {
		return nil, sortie.Invalidf("key_id", "AWS KMS key ID must be 1-2048 bytes, got %d", len(keyID))
	}
	return &KEK{api: api, keyID: keyID}, nil
}

// NewFromConfig returns a KEK of keyID with a KMS client made from cfg.
func NewFromConfig(cfg aws.Config, keyID string) (*KEK, error) {
	return New(kms.NewFromConfig(cfg), keyID)
}

// Requests returns how many KMS requests the KEK made.
func (k *KEK) Requests() int64 { return k.requests.Load() }

// GenerateDataKey implements [envelope.KEK] with KMS GenerateDataKey
// (AES_256), sending ec as the encryption context.
func (k *KEK) GenerateDataKey(ctx context.Context, ec map[string]string) (plaintext, wrapped []byte, err error) {
	k.requests.Add(1)
	out, err := k.api.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId: aws.String(k.keyID), KeySpec: types.DataKeySpecAes256, EncryptionContext: ec,
	})
	if err != nil {
		return nil, nil, classify("GenerateDataKey", k.keyID, err)
	}
	return out.Plaintext, out.CiphertextBlob, nil
}

// Decrypt implements [envelope.KEK] with KMS Decrypt, naming the key and
// sending ec as the encryption context. A wrapped key that another key
// or context made, or that was tampered with, wraps [envelope.ErrAuth].
func (k *KEK) Decrypt(ctx context.Context, wrapped []byte, ec map[string]string) ([]byte, error) {
	k.requests.Add(1)
	out, err := k.api.Decrypt(ctx, &kms.DecryptInput{
		KeyId: aws.String(k.keyID), CiphertextBlob: wrapped, EncryptionContext: ec,
	})
	if err != nil {
		return nil, classify("Decrypt", k.keyID, err)
	}
	return out.Plaintext, nil
}

// classify wraps a KMS error once, adding envelope.ErrAuth for a refused
// ciphertext and sortie.ErrUnavailable for a failure a retry may cure;
// the SDK error stays reachable with errors.As.
func classify(op, keyID string, err error) error {
	var (
		badCT  *types.InvalidCiphertextException
		badKey *types.IncorrectKeyException
	)
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("awskms: %s with key %s: %w", op, keyID, err)
	case errors.As(err, &badCT) || errors.As(err, &badKey):
		return fmt.Errorf("awskms: %s with key %s: %w: %w", op, keyID, envelope.ErrAuth, err)
	case transient(err):
		return fmt.Errorf("awskms: %s with key %s: %w: %w", op, keyID, sortie.ErrUnavailable, err)
	}
	return fmt.Errorf("awskms: %s with key %s: %w", op, keyID, err)
}

// transient reports a network failure, throttling or a KMS-side fault.
func transient(err error) bool {
	var send *smithyhttp.RequestSendError
	if errors.As(err, &send) {
		return true
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "ThrottlingException", "KMSInternalException", "DependencyTimeoutException", "KeyUnavailableException":
		return true
	}
	return api.ErrorFault() == smithy.FaultServer
}
