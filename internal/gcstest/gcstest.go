// Package gcstest runs a Cloud Storage emulator on loopback for tests of
// the gs:// payload store: fake-gcs-server's fakestorage, in process,
// over HTTPS with a test certificate, and a bucket opened on it with
// gocloud.dev's gcsblob, as the host opens gs:// buckets, that signs URLs
// with a service-account key made for the test. The signed URLs are the
// ones production gets (https://storage.googleapis.com/BUCKET/KEY?...);
// [Server.HTTPClient] delivers them to the emulator.
package gcstest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/gcp"
	"google.golang.org/api/option"
)

// Server is a running emulator holding one bucket.
type Server struct {
	srv    *fakestorage.Server
	bucket string
}

// Start starts the emulator on 127.0.0.1 with bucket, stopped when the
// test ends.
func Start(t testing.TB, bucket string) *Server {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "https", Host: "127.0.0.1", PublicHost: "127.0.0.1"})
	if err != nil {
		t.Fatalf("gcstest: start the Cloud Storage emulator: %v", err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	return &Server{srv: srv, bucket: bucket}
}

// Name is the bucket's name in references: "gs://BUCKET".
func (s *Server) Name() string { return "gs://" + s.bucket }

// HTTPClient returns a client for the signed URLs: it sends every
// request to the emulator whatever the URL's host
// (storage.googleapis.com) and trusts its test certificate. It follows no
// redirect.
func (s *Server) HTTPClient() *http.Client {
	addr := strings.TrimPrefix(s.srv.URL(), "https://")
	return &http.Client{
		Transport:     toEmulator{addr: addr, next: s.srv.HTTPClient().Transport},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// toEmulator sends requests to addr.
type toEmulator struct {
	addr string
	next http.RoundTripper
}

func (e toEmulator) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = e.addr, e.addr
	return e.next.RoundTrip(r)
}

// Bucket opens the bucket with gcsblob, closed when the test ends; its
// SignedURL signs with a fresh RSA key as the service account
// sortie-test@example.iam.gserviceaccount.com.
func (s *Server) Bucket(t testing.TB) *blob.Bucket {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	client := &gcp.HTTPClient{Client: *s.srv.HTTPClient()}
	b, err := gcsblob.OpenBucket(t.Context(), client, s.bucket, &gcsblob.Options{
		GoogleAccessID: "sortie-test@example.iam.gserviceaccount.com",
		PrivateKey:     pemKey,
		ClientOptions:  []option.ClientOption{option.WithEndpoint(s.srv.URL() + "/storage/v1/")},
	})
	if err != nil {
		t.Fatalf("gcstest: open gs://%s: %v", s.bucket, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// Object returns the stored bytes of key, or nil when there is none.
func (s *Server) Object(t testing.TB, key string) []byte {
	t.Helper()
	o, err := s.srv.GetObject(s.bucket, key)
	if err != nil {
		return nil
	}
	return o.Content
}
