package gcpkms_test

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"net"
	"sync/atomic"
	"testing"

	kms "cloud.google.com/go/kms/apiv1"
	"cloud.google.com/go/kms/apiv1/kmspb"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/gcpkms"
	"github.com/tink-crypto/tink-go/v2/aead/subtle"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const (
	keyA = "projects/p/locations/global/keyRings/sortie/cryptoKeys/a"
	keyB = "projects/p/locations/global/keyRings/sortie/cryptoKeys/b"
)

// kmsServer is an in-process Cloud KMS speaking the real gRPC API: each
// key is an AES-256-GCM key and the AAD is authenticated, as in Cloud KMS.
type kmsServer struct {
	kmspb.UnimplementedKeyManagementServiceServer
	keys    map[string]*subtle.AESGCM
	corrupt atomic.Bool // answer with a wrong ciphertext CRC32C
}

var table = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) *wrapperspb.Int64Value { return wrapperspb.Int64(int64(crc32.Checksum(b, table))) }

func (s *kmsServer) Encrypt(_ context.Context, req *kmspb.EncryptRequest) (*kmspb.EncryptResponse, error) {
	a, ok := s.keys[req.Name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "key %s not found", req.Name)
	}
	ct, err := a.Encrypt(req.Plaintext, req.AdditionalAuthenticatedData)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	sum := crc(ct)
	if s.corrupt.Load() {
		sum.Value++
	}
	return &kmspb.EncryptResponse{Name: req.Name + "/cryptoKeyVersions/1", Ciphertext: ct, CiphertextCrc32C: sum,
		VerifiedPlaintextCrc32C:                   req.PlaintextCrc32C.GetValue() == crc(req.Plaintext).Value,
		VerifiedAdditionalAuthenticatedDataCrc32C: req.AdditionalAuthenticatedDataCrc32C.GetValue() == crc(req.AdditionalAuthenticatedData).Value,
	}, nil
}

func (s *kmsServer) Decrypt(_ context.Context, req *kmspb.DecryptRequest) (*kmspb.DecryptResponse, error) {
	a, ok := s.keys[req.Name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "key %s not found", req.Name)
	}
	if req.CiphertextCrc32C.GetValue() != crc(req.Ciphertext).Value {
		return nil, status.Error(codes.InvalidArgument, "ciphertext CRC32C mismatch")
	}
	pt, err := a.Decrypt(req.Ciphertext, req.AdditionalAuthenticatedData)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, "Decryption failed: the ciphertext is invalid.")
	}
	return &kmspb.DecryptResponse{Plaintext: pt, PlaintextCrc32C: crc(pt)}, nil
}

// newClient starts the server and returns a real Cloud KMS client of it.
func newClient(t *testing.T) (*kms.KeyManagementClient, *kmsServer) {
	t.Helper()
	srv := &kmsServer{keys: map[string]*subtle.AESGCM{}}
	for i, name := range []string{keyA, keyB} {
		a, err := subtle.NewAESGCM(bytes.Repeat([]byte{byte(i + 1)}, 32))
		if err != nil {
			t.Fatal(err)
		}
		srv.keys[name] = a
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	kmspb.RegisterKeyManagementServiceServer(g, srv)
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	c, err := kms.NewKeyManagementClient(context.Background(), option.WithEndpoint(ln.Addr().String()),
		option.WithoutAuthentication(), option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatalf("NewKeyManagementClient = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, srv
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
	srv.corrupt.Store(true)
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
