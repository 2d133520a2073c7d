package secretstores

import (
	"context"
	"hash/crc32"
	"net"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// GCP is a running in-process Secret Manager.
type GCP struct {
	secretmanagerpb.UnimplementedSecretManagerServiceServer
	// Endpoint is the server's loopback host:port.
	Endpoint string

	mu      sync.Mutex
	secrets map[string]string // "projects/P/secrets/S" → latest version's data
	asked   []string
}

// StartGCP serves secrets ("projects/P/secrets/S" → the data of its
// latest version) until tb ends.
func StartGCP(tb testing.TB, secrets map[string]string) *GCP {
	tb.Helper()
	s := &GCP{secrets: secrets}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("secretstores: listen: %v", err)
	}
	g := grpc.NewServer()
	secretmanagerpb.RegisterSecretManagerServiceServer(g, s)
	go g.Serve(ln)
	tb.Cleanup(g.Stop)
	s.Endpoint = ln.Addr().String()
	return s
}

// Asked returns the version names of the AccessSecretVersion calls
// answered, in order.
func (s *GCP) Asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked...)
}

// AccessSecretVersion answers the latest version of a known secret, with
// the payload's CRC32C (Castagnoli) as Secret Manager sends it.
func (s *GCP) AccessSecretVersion(_ context.Context, req *secretmanagerpb.AccessSecretVersionRequest) (*secretmanagerpb.AccessSecretVersionResponse, error) {
	secret, version, ok := strings.Cut(req.GetName(), "/versions/")
	if !ok || (version != "latest" && version != "1") {
		return nil, status.Errorf(codes.NotFound, "Secret Version [%s] not found.", req.GetName())
	}
	s.mu.Lock()
	s.asked = append(s.asked, req.GetName())
	v, found := s.secrets[secret]
	s.mu.Unlock()
	if !found {
		return nil, status.Errorf(codes.NotFound, "Secret [%s] not found or has no versions.", secret)
	}
	sum := int64(crc32.Checksum([]byte(v), crc32.MakeTable(crc32.Castagnoli)))
	return &secretmanagerpb.AccessSecretVersionResponse{Name: secret + "/versions/1",
		Payload: &secretmanagerpb.SecretPayload{Data: []byte(v), DataCrc32C: &sum}}, nil
}
