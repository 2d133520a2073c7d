package payload

import (
	"time"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob"
)

// signOptions are the options of every URL a Store signs: method and
// life, and, on Cloud Storage (gcsblob), V4 signing, Google's current
// scheme (V2, the storage client's default, is legacy; both last at most
// 7 days). Other drivers ignore the Cloud Storage option.
func signOptions(method string, life time.Duration) *blob.SignedURLOptions {
	return &blob.SignedURLOptions{Method: method, Expiry: life, BeforeSign: func(as func(any) bool) error {
		var o *storage.SignedURLOptions
		if as(&o) {
			o.Scheme = storage.SigningSchemeV4
		}
		return nil
	}}
}
