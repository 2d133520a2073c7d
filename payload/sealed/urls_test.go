package sealed_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/internal/envelopetest"
	"github.com/sortie-run/sortie/internal/s3test"
	"github.com/sortie-run/sortie/payload"
	"github.com/sortie-run/sortie/payload/sealed"
)

const canary = "canary-secret-41b7e2"

func keyring(t testing.TB) *envelope.Config {
	t.Helper()
	return envelopetest.Config(t, "k1")
}

func bigValue(n int) []byte {
	body := strings.Repeat(canary+" ", n/(len(canary)+1)+1)
	return []byte(`{"doc":"` + body[:n-10] + `"}`)
}

type rig struct {
	srv    *s3test.Server
	store  *payload.Store
	bucket *blob.Bucket
	kr     *envelope.Config
}

// newRig is a host's store on an S3-protocol server on loopback, signing
// with (dummy) credentials, as a host on AWS signs.
func newRig(t *testing.T) *rig { return newRigToken(t, "") }

// newRigToken is newRig signing with a session token (temporary
// credentials, as on Lambda, ECS or EC2), which every URL then carries.
func newRigToken(t *testing.T, token string) *rig {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDPAYLOADTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "payload-test-secret")
	t.Setenv("AWS_SESSION_TOKEN", token)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	srv := s3test.Start(t, "payloads")
	kr := keyring(t)
	store, b, err := payload.OpenURL(context.Background(), srv.SigningBlobURL(), kr, nil)
	if err != nil {
		t.Fatalf("OpenURL = %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return &rig{srv: srv, store: store, bucket: b, kr: kr}
}

// grant is what the host grants attempt 1 of run: variables stored, URLs
// signed, sealed into the invocation, and opened as the worker opens
// them.
func (r *rig) grant(t *testing.T, run sortie.RunID, vars []byte) (*sortie.Invocation, *sealed.URLs) {
	t.Helper()
	ctx := t.Context()
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: run, Attempt: 1, LaunchID: sortie.NewLaunchID(),
		Agent: sortie.Manifest{Name: "probe", Version: "1", Runtime: "go:probe"}, DeadlineMs: time.Now().Add(time.Minute).UnixMilli()}
	if vars != nil {
		ref, err := r.store.Put(ctx, run, "probe", "variables", "variables", vars)
		if err != nil {
			t.Fatalf("Put(variables) = %v", err)
		}
		inv.VariablesRef = ref
	}
	return inv, r.seal(t, inv)
}

// seal grants inv its URLs as the host does and opens them as the worker
// does.
func (r *rig) seal(t *testing.T, inv *sortie.Invocation) *sealed.URLs {
	t.Helper()
	if err := payload.NewGranter(r.store, r.kr).Seal(t.Context(), inv); err != nil {
		t.Fatalf("Granter.Seal = %v", err)
	}
	urls, _, err := sealed.OpenURLs(t.Context(), r.kr, inv)
	if err != nil {
		t.Fatalf("OpenURLs = %v", err)
	}
	return urls
}

// roundTrip reads inv's variables (vars) through the worker's store w,
// writes a 5 MB result through it as result-1, and checks that the host's
// store reads that result back; it returns the result.
func roundTrip(t *testing.T, w *sealed.URLStore, host *payload.Store, inv *sortie.Invocation, vars []byte) []byte {
	t.Helper()
	got, err := w.Get(t.Context(), inv.RunID, "probe", inv.VariablesRef)
	if err != nil || !bytes.Equal(got, vars) {
		t.Fatalf("URLStore.Get = %d bytes, %v; want the %d stored", len(got), err, len(vars))
	}
	result := bigValue(5 << 20)
	ref, err := w.Put(t.Context(), inv.RunID, "probe", "result-1", "output", result)
	if err != nil {
		t.Fatalf("URLStore.Put(5 MB) = %v", err)
	}
	back, err := host.Get(t.Context(), inv.RunID, "probe", ref)
	if err != nil || !bytes.Equal(back, result) {
		t.Fatalf("the host's Get(result) = %d bytes, %v; want the %d put", len(back), err, len(result))
	}
	return result
}

// A worker with nothing but the granted URLs and the keyring reads 5 MB
// of variables and writes a 5 MB result that the host reads back; the
// objects, the invocation and the errors hold neither the canary nor a
// URL's signature.
func TestURLStoreRoundTrip(t *testing.T) {
	r := newRig(t)
	run := sortie.NewRunID(time.Now())
	vars := bigValue(5 << 20)
	inv, urls := r.grant(t, run, vars)
	get := urls.Get[inv.VariablesRef.Key]
	put := urls.Put[payload.Key(run, "result-1")]
	if !strings.Contains(get, "X-Amz-Signature=") || !strings.Contains(put, "X-Amz-Signature=") || len(urls.Get) != 1 || len(urls.Put) != 2+sortie.MaxStepSlots {
		t.Fatalf("granted URLs = %d GET, %d PUT (%t, %t signed); want presigned URLs: GET of the variables, PUT of the result, the checkpoint and the step slots", len(urls.Get), len(urls.Put), get != "", put != "")
	}
	w := sealed.NewURLStore(urls, r.kr, nil)
	result := roundTrip(t, w, r.store, inv, vars)
	if _, err := w.Put(t.Context(), run, "probe", "result-2", "output", result); err == nil || strings.Contains(err.Error(), "X-Amz") {
		t.Errorf("Put(a key not granted) = %v, want an error naming no URL", err)
	}
	places := map[string][]byte{"invocation": inv.SealedPayloadURLs}
	for k, v := range r.srv.Objects(t) {
		places["object "+k] = v
	}
	sig := func(u string) string { _, s, _ := strings.Cut(u, "X-Amz-Signature="); return s }
	for where, b := range places {
		for _, secret := range []string{canary, sig(get), sig(put)} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds a canary secret or a URL signature in plaintext", where)
			}
		}
	}
}

// An object with one byte flipped is refused before it is opened, with
// sortie.ErrPayloadIntegrity and not as unavailable (a retry cannot cure
// it); a URL the store refuses is no integrity error, and its error does
// not hold the URL.
func TestURLStoreFlippedByte(t *testing.T) {
	r := newRig(t)
	run := sortie.NewRunID(time.Now())
	inv, urls := r.grant(t, run, bigValue(300<<10))
	raw, err := r.bucket.ReadAll(t.Context(), inv.VariablesRef.Key)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0x01
	if err := r.bucket.WriteAll(t.Context(), inv.VariablesRef.Key, raw, nil); err != nil {
		t.Fatal(err)
	}
	w := sealed.NewURLStore(urls, r.kr, nil)
	_, err = w.Get(t.Context(), run, "probe", inv.VariablesRef)
	if !errors.Is(err, sortie.ErrPayloadIntegrity) || errors.Is(err, sortie.ErrUnavailable) || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("Get(one byte flipped) = %v, want ErrPayloadIntegrity naming the SHA-256", err)
	}
	gone := *urls
	gone.Get = map[string]string{inv.VariablesRef.Key: r.srv.Endpoint + "/payloads/runs/" + string(run) + "/missing?X-Amz-Signature=0f0f"}
	_, err = sealed.NewURLStore(&gone, r.kr, http.DefaultClient).Get(t.Context(), run, "probe", inv.VariablesRef)
	if !errors.Is(err, sortie.ErrPayloadIntegrity) || errors.Is(err, sortie.ErrNotFound) || strings.Contains(err.Error(), "0f0f") ||
		!strings.Contains(err.Error(), inv.VariablesRef.SHA256) || !strings.Contains(err.Error(), inv.VariablesRef.Key) {
		t.Errorf("Get(a URL of a missing object) = %v, want ErrPayloadIntegrity naming the key and the SHA-256, without the URL", err)
	}
}
