package cloudkms

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
	"slices"
	"sync"
	"testing"

	kms "cloud.google.com/go/kms/apiv1"
	"cloud.google.com/go/kms/apiv1/kmspb"
	"github.com/tink-crypto/tink-go/v2/aead/subtle"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// KeyRing is the key ring of the keys [Key] names.
const KeyRing = "projects/test-project/locations/global/keyRings/sortie"

// Key returns the full name of key id in [KeyRing].
func Key(id string) string { return KeyRing + "/cryptoKeys/" + id }

// Call is one request the server answered.
type Call struct {
	// Method is "Encrypt" or "Decrypt".
	Method string
	// Version is the key version used,
	// "projects/P/locations/L/keyRings/R/cryptoKeys/K/cryptoKeyVersions/N".
	Version string
	// AAD is the request's additional authenticated data.
	AAD []byte
}

// Server is a running in-process Cloud KMS.
type Server struct {
	kmspb.UnimplementedKeyManagementServiceServer
	// Endpoint is the server's loopback host:port.
	Endpoint string

	mu      sync.Mutex
	keys    map[string][]*subtle.AESGCM // key name → versions, the last primary
	calls   []Call
	corrupt bool
}

// Start serves the keys named (full names, see [Key]), each with one
// version, on a loopback port until tb ends.
func Start(tb testing.TB, names ...string) *Server {
	tb.Helper()
	s := &Server{keys: map[string][]*subtle.AESGCM{}}
	for _, n := range names {
		s.Rotate(tb, n)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("cloudkms: listen: %v", err)
	}
	g := grpc.NewServer()
	kmspb.RegisterKeyManagementServiceServer(g, s)
	go g.Serve(ln)
	tb.Cleanup(g.Stop)
	s.Endpoint = ln.Addr().String()
	return s
}

// Rotate adds a new primary version to key name (creating the key): new
// ciphertexts use it, older ones still decrypt.
func (s *Server) Rotate(tb testing.TB, name string) {
	tb.Helper()
	b := make([]byte, 32)
	rand.Read(b)
	a, err := subtle.NewAESGCM(b)
	if err != nil {
		tb.Fatalf("cloudkms: key version: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[name] = append(s.keys[name], a)
}

// CorruptResponses makes Encrypt answer with a wrong ciphertext checksum
// (a response damaged in transit) while on is true.
func (s *Server) CorruptResponses(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corrupt = on
}

// Calls returns the requests answered so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// ClientOptions are the options of a Cloud KMS client of the server.
func (s *Server) ClientOptions() []option.ClientOption {
	return []option.ClientOption{option.WithEndpoint(s.Endpoint), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
}

// Client returns a real Cloud KMS client of the server, closed when tb ends.
func (s *Server) Client(tb testing.TB) *kms.KeyManagementClient {
	tb.Helper()
	c, err := kms.NewKeyManagementClient(context.Background(), s.ClientOptions()...)
	if err != nil {
		tb.Fatalf("cloudkms: NewKeyManagementClient(%s) = %v", s.Endpoint, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) *wrapperspb.Int64Value {
	return wrapperspb.Int64(int64(crc32.Checksum(b, castagnoli)))
}

func versionName(key string, v int) string { return fmt.Sprintf("%s/cryptoKeyVersions/%d", key, v) }

// key returns the versions of key name, or NotFound; s.mu is held.
func (s *Server) key(name string) ([]*subtle.AESGCM, error) {
	versions, ok := s.keys[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "CryptoKey %s not found.", name)
	}
	return versions, nil
}

// Encrypt implements kmspb.KeyManagementServiceServer with the key's
// primary version; the ciphertext is the version number (4 bytes,
// big-endian) and the AES-GCM output.
func (s *Server) Encrypt(_ context.Context, req *kmspb.EncryptRequest) (*kmspb.EncryptResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	versions, err := s.key(req.Name)
	if err != nil {
		return nil, err
	}
	v := len(versions)
	ct, err := versions[v-1].Encrypt(req.Plaintext, req.AdditionalAuthenticatedData)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	ct = append(binary.BigEndian.AppendUint32(nil, uint32(v)), ct...)
	sum := crc(ct)
	if s.corrupt {
		sum.Value++
	}
	s.calls = append(s.calls, Call{Method: "Encrypt", Version: versionName(req.Name, v), AAD: slices.Clone(req.AdditionalAuthenticatedData)})
	return &kmspb.EncryptResponse{Name: versionName(req.Name, v), Ciphertext: ct, CiphertextCrc32C: sum,
		VerifiedPlaintextCrc32C:                   req.PlaintextCrc32C.GetValue() == crc(req.Plaintext).Value,
		VerifiedAdditionalAuthenticatedDataCrc32C: req.AdditionalAuthenticatedDataCrc32C.GetValue() == crc(req.AdditionalAuthenticatedData).Value,
	}, nil
}

// Decrypt implements kmspb.KeyManagementServiceServer with the version the
// ciphertext names.
func (s *Server) Decrypt(_ context.Context, req *kmspb.DecryptRequest) (*kmspb.DecryptResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	versions, err := s.key(req.Name)
	if err != nil {
		return nil, err
	}
	if req.CiphertextCrc32C.GetValue() != crc(req.Ciphertext).Value {
		return nil, status.Error(codes.InvalidArgument, "The checksum in field ciphertext_crc32c did not match the data in field ciphertext.")
	}
	refused := status.Error(codes.InvalidArgument, "Decryption failed: the ciphertext is invalid.")
	if len(req.Ciphertext) < 4 {
		return nil, refused
	}
	v := int(binary.BigEndian.Uint32(req.Ciphertext))
	if v < 1 || v > len(versions) {
		return nil, refused
	}
	pt, err := versions[v-1].Decrypt(req.Ciphertext[4:], req.AdditionalAuthenticatedData)
	if err != nil {
		return nil, refused
	}
	s.calls = append(s.calls, Call{Method: "Decrypt", Version: versionName(req.Name, v), AAD: slices.Clone(req.AdditionalAuthenticatedData)})
	return &kmspb.DecryptResponse{Plaintext: pt, PlaintextCrc32C: crc(pt), UsedPrimary: v == len(versions)}, nil
}
