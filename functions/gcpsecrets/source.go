package gcpsecrets

import (
	"context"
	"hash/crc32"
	"strings"

	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
)

// API is the Secret Manager method the source calls;
// *secretmanager.Client implements it.
type API interface {
	AccessSecretVersion(ctx context.Context, req *secretmanagerpb.AccessSecretVersionRequest, opts ...gax.CallOption) (*secretmanagerpb.AccessSecretVersionResponse, error)
}

// Source reads secrets from Secret Manager. It is safe for concurrent use.
type Source struct {
	api API
}

var _ functions.SecretSource = (*Source)(nil)

// New returns a source calling api.
func New(api API) *Source { return &Source{api: api} }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Secret returns the payload of the secret version name
// ("projects/P/secrets/S/versions/V", or "projects/P/secrets/S" for the
// latest version). Errors are [*functions.SecretError]s with the gRPC
// code: NotFound wraps sortie.ErrNotFound; Unavailable, DeadlineExceeded,
// ResourceExhausted, Internal and a payload whose CRC32C does not match
// (DataLoss) wrap sortie.ErrUnavailable.
func (s *Source) Secret(ctx context.Context, name string) ([]byte, error) {
	if !strings.Contains(name, "/versions/") {
		name += "/versions/latest"
	}
	resp, err := s.api.AccessSecretVersion(ctx, &secretmanagerpb.AccessSecretVersionRequest{Name: name})
	if err != nil {
		return nil, secretError(err)
	}
	p := resp.GetPayload()
	if p.DataCrc32C != nil && int64(crc32.Checksum(p.GetData(), castagnoli)) != p.GetDataCrc32C() {
		return nil, &functions.SecretError{Code: codes.DataLoss.String(), Err: sortie.ErrUnavailable}
	}
	return p.GetData(), nil
}

// secretError keeps a gRPC error's code and class, dropping its message
// (which names the secret).
func secretError(err error) error {
	c := status.Code(err)
	se := &functions.SecretError{Code: c.String()}
	switch c {
	case codes.NotFound:
		se.Err = sortie.ErrNotFound
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Internal, codes.Unknown:
		se.Err = sortie.ErrUnavailable
	}
	return se
}
