package sealed_test

import (
	"bytes"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/gcstest"
	"github.com/sortie-run/sortie/payload"
	"github.com/sortie-run/sortie/payload/sealed"
)

// On Cloud Storage (gs://, a host on GCP): the host signs URLs for
// storage.googleapis.com as gcsblob signs them, and a worker with nothing
// but those URLs and the keyring reads the 5 MB variables and writes a
// 5 MB result the host reads back; no object holds the canary, none the
// URLs' signatures.
func TestURLStoreOnCloudStorage(t *testing.T) {
	srv := gcstest.Start(t, "payloads")
	kr := keyring(t)
	store := payload.New(srv.Bucket(t), srv.Name(), kr, nil)
	r := &rig{store: store, kr: kr}
	run := sortie.NewRunID(time.Now())
	vars := bigValue(5 << 20)
	inv, urls := r.grant(t, run, vars)
	get, put := urls.Get[inv.VariablesRef.Key], urls.Put[payload.Key(run, "result-1")]
	signature := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil || u.Host != "storage.googleapis.com" || u.Scheme != "https" {
			t.Fatalf("granted URL %.60q..., want an https URL of storage.googleapis.com", raw)
		}
		return u.Query().Get("X-Goog-Signature")
	}
	if signature(get) == "" || signature(put) == "" || urls.Store != "gs://payloads" {
		t.Fatalf("granted URLs of store %q: GET signed %t, PUT signed %t; want both signed for gs://payloads", urls.Store, signature(get) != "", signature(put) != "")
	}
	roundTrip(t, sealed.NewURLStore(urls, kr, srv.HTTPClient()), store, inv, vars)
	for _, key := range []string{inv.VariablesRef.Key, payload.Key(run, "result-1")} {
		obj := srv.Object(t, key)
		if len(obj) == 0 {
			t.Fatalf("no object %s in the bucket", key)
		}
		for _, secret := range []string{canary, signature(get), signature(put)} {
			if bytes.Contains(obj, []byte(secret)) || strings.Contains(string(inv.SealedPayloadURLs), secret) {
				t.Errorf("object %s or the invocation holds a canary secret or a URL signature in plaintext", key)
			}
		}
	}
}
