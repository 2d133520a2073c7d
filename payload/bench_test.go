package payload_test

import (
	"fmt"
	"testing"

	"github.com/sortie-run/sortie/internal/s3test"
	"github.com/sortie-run/sortie/payload"
)

// BenchmarkPutGet measures the latency a payload by reference adds: one
// Put (seal, hash, store) and one Get (read, hash, open) of a 1 MB and a
// 10 MB value, on fileblob and on an S3-protocol server on loopback.
//
//	go test ./payload -run '^$' -bench PutGet -benchtime 20x
func BenchmarkPutGet(b *testing.B) {
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
			srv := s3test.Start(b, "payloads")
			s, bucket, err := payload.OpenURL(bg, srv.BlobURL(), sealer(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer bucket.Close()
			benchPutGet(b, s, value)
		})
	}
}

func benchPutGet(b *testing.B, s *payload.Store, value []byte) {
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
