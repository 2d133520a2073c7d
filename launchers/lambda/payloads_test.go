package lambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/internal/s3test"
	"github.com/sortie-run/sortie/launchers/lambda"
	"github.com/sortie-run/sortie/payload"
	"github.com/sortie-run/sortie/payload/sealed"
	"github.com/sortie-run/sortie/pricing"
)

// payloadHost is a host's engine on AWS with a payload store: the bucket
// on an S3-protocol server on loopback (signing with the dummy
// credentials), its objects sealed with the KMS keyring the worker
// function holds, and each attempt granted presigned URLs
// (payload.Granter).
func payloadHost(t *testing.T, cp sortie.ControlPlane, l sortie.Launcher) (*sortie.Engine, *payload.Store, *s3test.Server, *envelope.Config) {
	t.Helper()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "AKIDHOSTSIGNER", "AWS_SECRET_ACCESS_KEY": "host-signer-secret",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	srv := s3test.Start(t, "sortie-payloads")
	kr := testKeyring(t)
	store, b, err := payload.OpenURL(t.Context(), srv.SigningBlobURL(), kr, nil)
	if err != nil {
		t.Fatalf("payload.OpenURL = %v", err)
	}
	t.Cleanup(func() { b.Close() })
	e := sortie.NewEngine(cp, l, probeAgents, &sortie.EngineOptions{DefaultPolicy: testPolicy, Payloads: store,
		Sealer: payload.NewGranter(store, kr), Pricer: pricing.Default(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { _ = e.Close() })
	return e, store, srv, kr
}

// A 5 MB variable and a 5 MB result round-trip through the worker
// function under the emulator: the host keeps the variables in the
// bucket, the function reads them and writes its result through the
// attempt's presigned URLs (no S3 client in the bootstrap), and the
// host's Get reads the result back. No invocation payload, stored run,
// event, object or log line holds the canary secret or a URL's signature.
func TestPayloadsByReference(t *testing.T) {
	table, cp := newTable(t)
	r := startRIE(t, 60, fnEnv(table))
	rec := &recorder{inner: &serial{l: newLauncher(t, r, lambda.Options{})}}
	e, store, srv, kr := payloadHost(t, cp, rec)
	// One canary in the document, another in the sealed configuration
	// (which the worker masks in the result, so it must not be in it).
	canary := "canary-" + fmt.Sprint(time.Now().UnixNano())
	doc := strings.Repeat(canary+" ", 5<<20/(len(canary)+1))
	run := submit(t, e, map[string]any{"events": 1, "output": doc}, sortie.Policy{}, json.RawMessage(`{"API_TOKEN":"config-`+canary+`"}`))
	if run.VariablesRef == nil || len(run.Variables) != 0 {
		t.Fatalf("Submit(5 MB variable) kept %d bytes inline, ref %v; want it by reference", len(run.Variables), run.VariablesRef)
	}
	done := waitRun(t, cp, run.ID, "the run to settle", settled)
	if done.State != sortie.StateCompleted || done.ResultRef == nil || len(done.Result) != 0 {
		t.Fatalf("run = %s reason %q result ref %v (%d bytes inline); want completed with its result by reference", done.State, done.Reason, done.ResultRef, len(done.Result))
	}
	got, err := e.Get(t.Context(), run.ID)
	if err != nil {
		t.Fatalf("Get(%s) = %v", run.ID, err)
	}
	var out string
	if err := json.Unmarshal(got.Result, &out); err != nil || out != doc {
		t.Fatalf("Get(%s).Result = %d bytes (%v), want the %d-byte document back", run.ID, len(got.Result), err, len(doc))
	}
	offloaded := int64(len(got.Variables) + len(got.Result))
	if u := done.Current().Usage; u == nil || u.OffloadedBytes != offloaded ||
		u.PayloadReads != 1 || u.PayloadWrites != 2 || u.PayloadStore != "s3" {
		t.Errorf("attempt Usage = %+v, want OffloadedBytes %d (variables and result stored), 2 writes (the engine's variables, the worker's result) and 1 read (the worker's variables) on s3", u, offloaded)
	}
	if c := got.Cost; c == nil || c.Components[sortie.ComponentPayload] == 0 {
		t.Errorf("run cost = %+v, want a payload component (the S3 GET and PUT)", c)
	}

	// The URLs the attempt was granted, as only the worker sees them.
	var inv sortie.Invocation
	if len(rec.sent) != 1 || json.Unmarshal(rec.sent[0], &inv) != nil || len(inv.SealedPayloadURLs) == 0 {
		t.Fatalf("the engine started %d invocations; want 1 carrying sealed payload URLs", len(rec.sent))
	}
	urls, _, err := sealed.OpenURLs(t.Context(), kr, &inv)
	if err != nil || len(urls.Get) != 1 || len(urls.Put) != 2+sortie.MaxStepSlots {
		t.Fatalf("opened URLs: %d GET, %d PUT (%v); want a GET of the variables, PUTs of the result, the checkpoint and the step slots", len(urls.Get), len(urls.Put), err)
	}
	secrets := []string{canary, "config-" + canary}
	for _, m := range []map[string]string{urls.Get, urls.Put} {
		for _, u := range m {
			_, sig, ok := strings.Cut(u, "X-Amz-Signature=")
			if !ok {
				t.Fatalf("a granted URL is not presigned")
			}
			secrets = append(secrets, sig)
		}
	}
	places := map[string][]byte{"invocation": rec.sent[0], "function logs": []byte(r.Output())}
	stored, _ := cp.Get(context.Background(), run.ID)
	places["stored run"], _ = json.Marshal(stored)
	evs, _ := cp.Events(context.Background(), run.ID, sortie.Cursor{}, 100)
	places["events"], _ = json.Marshal(evs)
	for k, v := range srv.Objects(t) {
		places["object "+k] = v
	}
	if len(places) != 6 {
		t.Errorf("the bucket holds %d objects, want 2 (variables, result-1)", len(places)-4)
	}
	for where, b := range places {
		for i, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds secret %d (0, 1: the canaries, then URL signatures) in plaintext", where, i)
			}
		}
	}
	if err := store.DeleteRun(t.Context(), run.ID); err != nil || len(srv.Objects(t)) != 0 {
		t.Errorf("DeleteRun = %v, leaving %d objects; want none", err, len(srv.Objects(t)))
	}
}

// An object with one byte flipped in the bucket is refused by the
// worker function before it is opened: the run fails at once (a
// permanent error, no retry) with the integrity error, and its handler
// never ran.
func TestPayloadFlippedByteRefused(t *testing.T) {
	table, cp := newTable(t)
	r := startRIE(t, 60, fnEnv(table))
	s := &serial{l: newLauncher(t, r, lambda.Options{})}
	e, _, srv, _ := payloadHost(t, cp, s)
	release := s.holdStarts()
	defer release()
	run := submit(t, e, map[string]any{"events": 1, "output": strings.Repeat("d", 300<<10)}, sortie.Policy{MaxAttempts: 3}, nil)
	if run.VariablesRef == nil {
		t.Fatalf("Submit(300 KB variable) kept it inline, want it by reference")
	}
	b, err := blob.OpenBucket(t.Context(), srv.BlobURL())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	raw, err := b.ReadAll(t.Context(), run.VariablesRef.Key)
	if err != nil {
		t.Fatalf("ReadAll(%s) = %v", run.VariablesRef.Key, err)
	}
	raw[len(raw)/2] ^= 0x01
	if err := b.WriteAll(t.Context(), run.VariablesRef.Key, raw, nil); err != nil {
		t.Fatal(err)
	}
	release()
	done := waitRun(t, cp, run.ID, "the run to settle", settled)
	evs, _ := cp.Events(t.Context(), run.ID, sortie.Cursor{}, 10)
	if done.State != sortie.StateFailed || len(done.Attempts) != 1 || !strings.Contains(done.Reason, sortie.ErrPayloadIntegrity.Error()) || len(evs) != 0 {
		t.Fatalf("run = %s after %d attempts, reason %q, %d events; want failed after 1 attempt naming %q, no event (the handler never ran)",
			done.State, len(done.Attempts), done.Reason, len(evs), sortie.ErrPayloadIntegrity)
	}
}
