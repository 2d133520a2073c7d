// Package s3test starts an S3-protocol server (gofakes3, in memory) on
// 127.0.0.1 for tests, with one bucket, stopped when the test ends.
package s3test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob" // BlobURL's driver
)

// Server is a running S3-protocol server.
type Server struct {
	// Endpoint is its base URL, http://127.0.0.1:PORT.
	Endpoint string
	// Bucket is the bucket Start created.
	Bucket string
}

// Start starts a server on a free loopback port with bucket created, and
// stops it when t ends.
func Start(t testing.TB, bucket string) *Server {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatalf("s3test: create bucket %q: %v", bucket, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("s3test: listen on 127.0.0.1: %v", err)
	}
	srv := &http.Server{Handler: gofakes3.New(backend, gofakes3.WithoutVersioning()).Server()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return &Server{Endpoint: "http://" + ln.Addr().String(), Bucket: bucket}
}

// BlobURL returns the gocloud.dev/blob URL of the bucket: path-style
// requests to Endpoint, unsigned (the server takes any caller).
func (s *Server) BlobURL() string {
	q := url.Values{"endpoint": {s.Endpoint}, "region": {"us-east-1"}, "use_path_style": {"true"},
		"hostname_immutable": {"true"}, "anonymous": {"true"}}
	return "s3://" + s.Bucket + "?" + q.Encode()
}

// SigningBlobURL is BlobURL with requests and presigned URLs signed by
// the SDK's default credentials (set AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY; the server checks no signature), as a bucket
// with real credentials signs them.
func (s *Server) SigningBlobURL() string {
	q := url.Values{"endpoint": {s.Endpoint}, "region": {"us-east-1"}, "use_path_style": {"true"},
		"hostname_immutable": {"true"}}
	return "s3://" + s.Bucket + "?" + q.Encode()
}

// Objects returns every object of the bucket by key, read over the S3
// protocol.
func (s *Server) Objects(t testing.TB) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, s.BlobURL())
	if err != nil {
		t.Fatalf("s3test: open %s: %v", s.BlobURL(), err)
	}
	defer b.Close()
	out := map[string][]byte{}
	it := b.List(nil)
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("s3test: list: %v", err)
		}
		if out[o.Key], err = b.ReadAll(ctx, o.Key); err != nil {
			t.Fatalf("s3test: read %s: %v", o.Key, err)
		}
	}
}
