package gcpkms_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	kms "cloud.google.com/go/kms/apiv1"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/gcpkms"
	"github.com/sortie-run/sortie/testrig/cloudkms"
)

var (
	keyA = cloudkms.Key("a")
	keyB = cloudkms.Key("b")
)

// newClient starts an in-process Cloud KMS with keys a and b and returns
// a real client of it.
func newClient(t *testing.T) (*kms.KeyManagementClient, *cloudkms.Server) {
	t.Helper()
	srv := cloudkms.Start(t, keyA, keyB)
	return srv.Client(t), srv
}

var ec = map[string]string{"purpose": "invocation-config", "agent": "probe"}

func TestDataKeyRoundTrip(t *testing.T) {
	c, _ := newClient(t)
	k, err := gcpkms.New(c, keyA)
	if err != nil {
		t.Fatal(err)
	}
	key, wrapped, err := k.GenerateDataKey(context.Background(), ec)
	if err != nil || len(key) != envelope.DataKeyBytes {
		t.Fatalf("GenerateDataKey(%v) = %d-byte key, %v; want a %d-byte key", ec, len(key), err, envelope.DataKeyBytes)
	}
	got, err := k.Decrypt(context.Background(), wrapped, ec)
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("Decrypt(wrapped, %v) = %v; want the generated key", ec, err)
	}
	if n := k.Requests(); n != 2 {
		t.Errorf("Requests() = %d, want 2", n)
	}
}

// The context is Cloud KMS's additional authenticated data: another
// context, another key or a tampered wrapped key is refused.
func TestDecryptRefusesAnotherContextOrKey(t *testing.T) {
	c, _ := newClient(t)
	a, _ := gcpkms.New(c, keyA)
	b, _ := gcpkms.New(c, keyB)
	_, wrapped, err := a.GenerateDataKey(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"purpose": "config-at-rest", "agent": "probe"}
	if _, err := a.Decrypt(context.Background(), wrapped, other); !errors.Is(err, envelope.ErrAuth) {
		t.Errorf("Decrypt with context %v = %v, want envelope.ErrAuth", other, err)
	}
	if _, err := b.Decrypt(context.Background(), wrapped, ec); !errors.Is(err, envelope.ErrAuth) {
		t.Errorf("Decrypt of a key-a data key with key b = %v, want envelope.ErrAuth", err)
	}
	tampered := bytes.Clone(wrapped)
	tampered[0] ^= 1
	if _, err := a.Decrypt(context.Background(), tampered, ec); !errors.Is(err, envelope.ErrAuth) {
		t.Errorf("Decrypt(tampered) = %v, want envelope.ErrAuth", err)
	}
}

// A response whose checksum does not match is not trusted.
func TestCorruptResponseIsRefused(t *testing.T) {
	c, srv := newClient(t)
	k, _ := gcpkms.New(c, keyA)
	srv.CorruptResponses(true)
	if _, _, err := k.GenerateDataKey(context.Background(), ec); !errors.Is(err, sortie.ErrUnavailable) {
		t.Errorf("GenerateDataKey with a corrupted response = %v, want sortie.ErrUnavailable", err)
	}
}

func TestSealAndOpenThroughCloudKMS(t *testing.T) {
	c, _ := newClient(t)
	k, _ := gcpkms.New(c, keyA)
	ring, err := envelope.NewKeyring("gcp-a", k)
	if err != nil {
		t.Fatal(err)
	}
	keeper := envelope.New(ring, nil)
	b := envelope.Binding{RunID: "r1", Attempt: 1, InvocationVersion: sortie.InvocationVersion, Purpose: envelope.PurposeInvocation, Agent: "probe"}
	sealed, err := keeper.Seal(context.Background(), []byte(`{"TOKEN":"t"}`), b)
	if err != nil {
		t.Fatalf("Seal = %v", err)
	}
	got, err := keeper.Open(context.Background(), sealed, b)
	if err != nil || string(got) != `{"TOKEN":"t"}` {
		t.Fatalf("Open = %q, %v; want the plaintext", got, err)
	}
}

func TestNewRefusesBadName(t *testing.T) {
	c, _ := newClient(t)
	if _, err := gcpkms.New(c, "keyRings/x"); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf(`New(api, "keyRings/x") = %v, want sortie.ErrInvalidArgument`, err)
	}
	if _, err := gcpkms.New(nil, keyA); err == nil {
		t.Error("New(nil, name) = nil error, want an error")
	}
}

// After Cloud KMS rotates a key (a new primary version), data keys
// wrapped by the old version still unwrap, and new ones use the new
// version.
func TestDecryptAfterCloudKMSRotation(t *testing.T) {
	c, srv := newClient(t)
	k, _ := gcpkms.New(c, keyA)
	key, wrapped, err := k.GenerateDataKey(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	srv.Rotate(t, keyA)
	if got, err := k.Decrypt(context.Background(), wrapped, ec); err != nil || !bytes.Equal(got, key) {
		t.Fatalf("Decrypt(data key of version 1) after rotation = %v; want the key", err)
	}
	if _, _, err := k.GenerateDataKey(context.Background(), ec); err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls()
	if last := calls[len(calls)-1]; last.Method != "Encrypt" || !strings.HasSuffix(last.Version, "/cryptoKeyVersions/2") {
		t.Errorf("Encrypt after rotation used %s, want version 2", last.Version)
	}
}
