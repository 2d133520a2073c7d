package payload_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/s3test"
	"github.com/sortie-run/sortie/payload"
	"github.com/sortie-run/sortie/payload/sealed"
)

// BenchmarkPutGet measures the latency a payload by reference adds: one
// Put (seal, hash, store) and one Get (read, hash, open) of a 1 MB and a
// 10 MB value, on fileblob, on an S3-protocol server on loopback through
// the Store (a host, s3blob), and on the same server through presigned
// URLs (a Lambda or Cloud Run worker: sealed.URLStore, net/http; the
// URLs are signed once, as an attempt's are, outside the loop).
//
//	go test ./payload -run '^$' -bench PutGet -benchtime 20x
func BenchmarkPutGet(b *testing.B) {
	b.Setenv("AWS_ACCESS_KEY_ID", "AKIDPAYLOADBENCH")
	b.Setenv("AWS_SECRET_ACCESS_KEY", "payload-bench-secret")
	b.Setenv("AWS_SESSION_TOKEN", "")
	b.Setenv("AWS_PROFILE", "")
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, size := range []int{1 << 20, 10 << 20} {
		value := bigValue(size)
		b.Run(fmt.Sprintf("file/%dMB", size>>20), func(b *testing.B) {
			s, bucket, err := payload.OpenFile(b.TempDir(), sealer(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer bucket.Close()
			benchPutGet(b, s, value)
		})
		b.Run(fmt.Sprintf("s3/%dMB", size>>20), func(b *testing.B) {
			s := s3Store(b)
			benchPutGet(b, s, value)
		})
		b.Run(fmt.Sprintf("s3-urls/%dMB", size>>20), func(b *testing.B) {
			benchPutGet(b, urlStore(b, s3Store(b)), value)
		})
	}
}

// s3Store is a Store on an S3-protocol server on loopback that signs
// URLs (with the benchmark's dummy credentials).
func s3Store(b *testing.B) *payload.Store {
	srv := s3test.Start(b, "payloads")
	s, bucket, err := payload.OpenURL(bg, srv.SigningBlobURL(), sealer(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bucket.Close() })
	return s
}

// urlStore is what a worker holds: a URLStore over a GET and a PUT URL
// of the object benchPutGet writes and reads, signed by s.
func urlStore(b *testing.B, s *payload.Store) *sealed.URLStore {
	key := payload.Key(run1, "variables")
	urls := &sealed.URLs{Store: s.Name(), MaxPayloadBytes: s.Limits().MaxPayloadBytes, Get: map[string]string{}, Put: map[string]string{}}
	for method, m := range map[string]map[string]string{http.MethodGet: urls.Get, http.MethodPut: urls.Put} {
		u, err := s.SignURL(bg, method, key, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		m[key] = u
	}
	return sealed.NewURLStore(urls, sealer(b), nil)
}

func benchPutGet(b *testing.B, s sortie.PayloadStore, value []byte) {
	b.SetBytes(int64(len(value)))
	for b.Loop() {
		ref, err := s.Put(bg, run1, "probe", "variables", "variables", value)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Get(bg, run1, "probe", ref); err != nil {
			b.Fatal(err)
		}
	}
}
