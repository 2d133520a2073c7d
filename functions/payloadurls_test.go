package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/internal/envelopetest"
	"github.com/sortie-run/sortie/internal/s3test"
	"github.com/sortie-run/sortie/payload"
)

// urlKeyring is the keyring host and worker share in these tests.
func urlKeyring(t *testing.T) *envelope.Config {
	t.Helper()
	return envelopetest.Config(t, "k1")
}

// urlStore returns a payload store on a gofakes3 bucket whose URLs a
// host signs, sealing with kr (urlKeyring).
func urlStore(t *testing.T, kr *envelope.Config) *payload.Store {
	t.Helper()
	store, _ := urlBucket(t, kr)
	return store
}

// urlBucket is urlStore with its server, whose objects a test reads.
func urlBucket(t *testing.T, kr *envelope.Config) (*payload.Store, *s3test.Server) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDWORKERTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "worker-test-secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	srv := s3test.Start(t, "payloads")
	store, b, err := payload.OpenURL(t.Context(), srv.SigningBlobURL(), kr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return store, srv
}

// A worker with PayloadURLs reads an attempt's variables and stores its
// result through the URLs its invocation carries, sealed; the handler
// never sees the URLs. A worker without PayloadURLs refuses the attempt
// with error type "payload" before its handler runs.
func TestWorkerPayloadURLs(t *testing.T) {
	kr := urlKeyring(t)
	store := urlStore(t, kr)
	doc := strings.Repeat("d", 300<<10)
	vars, _ := json.Marshal(map[string]string{"doc": doc})
	inv := testInvocation("go:h", "")
	var err error
	if inv.VariablesRef, err = store.Put(t.Context(), inv.RunID, inv.Agent.Name, "variables", "variables", vars); err != nil {
		t.Fatal(err)
	}
	if err := payload.NewGranter(store, kr).Seal(t.Context(), inv); err != nil {
		t.Fatal(err)
	}
	ran := 0
	w, _ := newWorker(register(func(_ context.Context, c *Call) (any, error) {
		ran++
		var v struct{ Doc string }
		if err := c.Variables(&v); err != nil {
			return nil, err
		}
		if len(c.Invocation().SealedPayloadURLs) != 0 {
			t.Error("the handler's invocation carries the payload URLs")
		}
		return v.Doc + v.Doc, nil
	}))
	w.PayloadURLs = kr
	o, err := w.Execute(t.Context(), inv, newRecorder(t))
	if err != nil || o.ResultRef == nil || o.Error != nil {
		t.Fatalf("Execute = %+v, %v; want a result kept by reference", o, err)
	}
	got, err := store.Get(t.Context(), inv.RunID, inv.Agent.Name, o.ResultRef)
	if want, _ := json.Marshal(doc + doc); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the stored result = %d bytes, %v; want %d", len(got), err, len(want))
	}

	w.PayloadURLs = nil
	inv.LaunchID = sortie.NewLaunchID()
	o, err = w.Execute(t.Context(), inv, newRecorder(t))
	if err != nil || o.Error == nil || o.Error.Type != errTypePayload || o.Error.Retryable || ran != 1 {
		t.Fatalf("Execute without PayloadURLs = %+v, %v (handler ran %d times); want error type %q, not retryable, handler not run again", o, err, ran, errTypePayload)
	}
}
