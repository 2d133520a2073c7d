package gcpkms

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"regexp"
	"strings"
	"sync/atomic"

	"cloud.google.com/go/kms/apiv1/kmspb"
	"github.com/googleapis/gax-go/v2"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// API is the part of the Cloud KMS client a [KEK] uses;
// *kms.KeyManagementClient (cloud.google.com/go/kms/apiv1) implements it.
type API interface {
	Encrypt(ctx context.Context, req *kmspb.EncryptRequest, opts ...gax.CallOption) (*kmspb.EncryptResponse, error)
	Decrypt(ctx context.Context, req *kmspb.DecryptRequest, opts ...gax.CallOption) (*kmspb.DecryptResponse, error)
}

var keyNamePattern = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$`)

// KEK is an [envelope.KEK] held by Google Cloud KMS: one symmetric
// ENCRYPT_DECRYPT key. It is safe for concurrent use.
type KEK struct {
	api      API
	name     string
	requests atomic.Int64
}

var _ envelope.KEK = (*KEK)(nil)

// New returns a KEK of the Cloud KMS key name
// ("projects/P/locations/L/keyRings/R/cryptoKeys/K") called through api.
// A bad name is a [*sortie.ValidationError].
func New(api API, name string) (*KEK, error) {
	if api == nil {
		return nil, errors.New("gcpkms: New with a nil API")
	}
	if !keyNamePattern.MatchString(name) {
		return nil, sortie.Invalidf("key_name", "%q must be projects/P/locations/L/keyRings/R/cryptoKeys/K", name)
	}
	return &KEK{api: api, name: name}, nil
}

// Requests returns how many Cloud KMS requests the KEK made.
func (k *KEK) Requests() int64 { return k.requests.Load() }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) *wrapperspb.Int64Value {
	return wrapperspb.Int64(int64(crc32.Checksum(b, castagnoli)))
}

// GenerateDataKey implements [envelope.KEK]: a random data key wrapped by
// Cloud KMS Encrypt with ec (encoded by [envelope.EncodeContext]) as
// additional authenticated data, with CRC32C checks both ways.
func (k *KEK) GenerateDataKey(ctx context.Context, ec map[string]string) (plaintext, wrapped []byte, err error) {
	key := make([]byte, envelope.DataKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, nil, fmt.Errorf("gcpkms: random data key: %w", err)
	}
	aad := envelope.EncodeContext(ec)
	k.requests.Add(1)
	resp, err := k.api.Encrypt(ctx, &kmspb.EncryptRequest{Name: k.name, Plaintext: key,
		AdditionalAuthenticatedData: aad, PlaintextCrc32C: crc(key), AdditionalAuthenticatedDataCrc32C: crc(aad)})
	if err == nil {
		err = k.checkEncrypt(resp)
	}
	if err != nil {
		clear(key)
		return nil, nil, classify("Encrypt", k.name, err)
	}
	return key, resp.Ciphertext, nil
}

// checkEncrypt verifies the integrity fields of an Encrypt response.
func (k *KEK) checkEncrypt(resp *kmspb.EncryptResponse) error {
	switch {
	case !strings.HasPrefix(resp.Name, k.name+"/") && resp.Name != k.name:
		return fmt.Errorf("the response names key %q", resp.Name)
	case !resp.VerifiedPlaintextCrc32C || !resp.VerifiedAdditionalAuthenticatedDataCrc32C:
		return errors.New("the request was corrupted in transit (CRC32C not verified)")
	case resp.CiphertextCrc32C == nil || resp.CiphertextCrc32C.Value != crc(resp.Ciphertext).Value:
		return errors.New("the response was corrupted in transit (ciphertext CRC32C mismatch)")
	}
	return nil
}

// Decrypt implements [envelope.KEK] with Cloud KMS Decrypt and ec as the
// additional authenticated data. A wrapped key made with another key or
// context, or tampered with, wraps [envelope.ErrAuth].
func (k *KEK) Decrypt(ctx context.Context, wrapped []byte, ec map[string]string) ([]byte, error) {
	aad := envelope.EncodeContext(ec)
	k.requests.Add(1)
	resp, err := k.api.Decrypt(ctx, &kmspb.DecryptRequest{Name: k.name, Ciphertext: wrapped,
		AdditionalAuthenticatedData: aad, CiphertextCrc32C: crc(wrapped), AdditionalAuthenticatedDataCrc32C: crc(aad)})
	if err != nil {
		return nil, classify("Decrypt", k.name, err)
	}
	if resp.PlaintextCrc32C == nil || resp.PlaintextCrc32C.Value != crc(resp.Plaintext).Value {
		clear(resp.Plaintext)
		return nil, classify("Decrypt", k.name, errors.New("the response was corrupted in transit (plaintext CRC32C mismatch)"))
	}
	return resp.Plaintext, nil
}

// classify wraps a Cloud KMS error once: InvalidArgument on Decrypt (a
// ciphertext or AAD it refuses) adds envelope.ErrAuth; codes a retry may
// cure, and failed integrity checks, add sortie.ErrUnavailable.
func classify(op, name string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("gcpkms: %s with key %s: %w", op, name, err)
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("gcpkms: %s with key %s: %w: %w", op, name, sortie.ErrUnavailable, err)
	}
	switch st.Code() {
	case codes.InvalidArgument:
		if op == "Decrypt" {
			return fmt.Errorf("gcpkms: %s with key %s: %w: %w", op, name, envelope.ErrAuth, err)
		}
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Internal, codes.Aborted:
		return fmt.Errorf("gcpkms: %s with key %s: %w: %w", op, name, sortie.ErrUnavailable, err)
	}
	return fmt.Errorf("gcpkms: %s with key %s: %w", op, name, err)
}
