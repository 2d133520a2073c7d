package awskms_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/awskms"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/testrig/localkms"
)

func TestMain(m *testing.M) { os.Exit(localkms.Main(m)) }

var ec = map[string]string{"purpose": "invocation-config", "agent": "probe"}

func newKEK(t *testing.T, keyID string) *awskms.KEK {
	t.Helper()
	k, err := awskms.New(localkms.Shared(t).Client(), keyID)
	if err != nil {
		t.Fatalf("awskms.New(%q) = %v", keyID, err)
	}
	return k
}

func generate(t *testing.T, k *awskms.KEK) (key, wrapped []byte) {
	t.Helper()
	key, wrapped, err := k.GenerateDataKey(context.Background(), ec)
	if err != nil {
		t.Fatalf("GenerateDataKey(%v) = %v", ec, err)
	}
	if len(key) != envelope.DataKeyBytes || len(wrapped) == 0 {
		t.Fatalf("GenerateDataKey returned a %d-byte key wrapped in %d bytes, want %d wrapped in more than 0",
			len(key), len(wrapped), envelope.DataKeyBytes)
	}
	return key, wrapped
}

func TestDataKeyRoundTrip(t *testing.T) {
	for _, keyID := range []string{localkms.ARN(localkms.KeyA), localkms.KeyB, localkms.AliasA} {
		t.Run(keyID, func(t *testing.T) {
			k := newKEK(t, keyID)
			key, wrapped := generate(t, k)
			got, err := k.Decrypt(context.Background(), wrapped, ec)
			if err != nil {
				t.Fatalf("Decrypt(wrapped, %v) = %v, want the data key", ec, err)
			}
			if !bytes.Equal(got, key) {
				t.Fatal("Decrypt returned another key than GenerateDataKey made")
			}
			if n := k.Requests(); n != 2 {
				t.Errorf("Requests() = %d after one GenerateDataKey and one Decrypt, want 2", n)
			}
		})
	}
}

// KMS binds the encryption context to the wrapped key: any other context
// is refused, and so is another key.
func TestDecryptRefusesAnotherContextOrKey(t *testing.T) {
	k := newKEK(t, localkms.ARN(localkms.KeyA))
	_, wrapped := generate(t, k)
	for name, other := range map[string]map[string]string{
		"other purpose": {"purpose": "config-at-rest", "agent": "probe"},
		"other agent":   {"purpose": "invocation-config", "agent": "textstats"},
		"extra entry":   {"purpose": "invocation-config", "agent": "probe", "run_id": "r1"},
		"missing entry": {"purpose": "invocation-config"},
		"no context":    nil,
	} {
		_, err := k.Decrypt(context.Background(), wrapped, other)
		var ice *types.InvalidCiphertextException
		if !errors.Is(err, envelope.ErrAuth) || !errors.As(err, &ice) {
			t.Errorf("%s: Decrypt(wrapped, %v) = %v, want envelope.ErrAuth and InvalidCiphertextException", name, other, err)
		}
	}
	_, err := newKEK(t, localkms.ARN(localkms.KeyB)).Decrypt(context.Background(), wrapped, ec)
	if !errors.Is(err, envelope.ErrAuth) {
		t.Errorf("Decrypt of a key-A data key with key B = %v, want envelope.ErrAuth", err)
	}
	tampered := bytes.Clone(wrapped)
	tampered[len(tampered)-1] ^= 1
	if _, err := k.Decrypt(context.Background(), tampered, ec); !errors.Is(err, envelope.ErrAuth) {
		t.Errorf("Decrypt(tampered wrapped key) = %v, want envelope.ErrAuth", err)
	}
}

// A KMS that cannot be reached is a transient failure.
func TestUnreachableIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	client := kms.New(kms.Options{Region: localkms.Region, BaseEndpoint: aws.String("http://" + addr),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""), RetryMaxAttempts: 1})
	k, err := awskms.New(client, localkms.KeyA)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.GenerateDataKey(context.Background(), ec); !errors.Is(err, sortie.ErrUnavailable) {
		t.Errorf("GenerateDataKey against a closed port = %v, want sortie.ErrUnavailable", err)
	}
}

func TestNewRefusesBadArguments(t *testing.T) {
	if _, err := awskms.New(nil, localkms.KeyA); err == nil {
		t.Error("New(nil API) = nil error, want an error")
	}
	if _, err := awskms.New(localkms.Shared(t).Client(), ""); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf(`New(api, "") = %v, want sortie.ErrInvalidArgument`, err)
	}
}
