package cloudrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/host/gcphost"
	"github.com/sortie-run/sortie/internal/s3test"
	"github.com/sortie-run/sortie/payload"
	"github.com/sortie-run/sortie/payload/sealed"
	"github.com/sortie-run/sortie/testrig/cloudkms"
)

// payloadCanary is in the large variables; no object, stored item,
// RunJob request or log may hold it in plaintext.
const payloadCanary = "cloudrun-payload-canary-93d1"

// Jobs: a 100 KB variable takes the invocation over the 32 KiB
// environment value, so the host keeps it in the bucket (sealed with its
// Cloud KMS keyring) and the RunJob request carries a reference and the
// attempt's presigned URLs, sealed; the job's container (the real
// sortie-cloudrun binary) reads it through them with its keyring. A 5 MB
// variable and a 5 MB result round-trip the same way, the result written
// by the container through its PUT URL. No object, stored run, event,
// RunJob request or container log holds the canary or a URL's signature.
func TestJobPayloadsByReference(t *testing.T) {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "AKIDHOSTSIGNER", "AWS_SECRET_ACCESS_KEY": "host-signer-secret",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	kms := cloudkms.Start(t, key1)
	bucket := s3test.Start(t, "payloads")
	dir := t.TempDir()
	path := filepath.Join(dir, "sortie.db")
	cp, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	fake := startFakeEnv(t, []string{fncloudrun.EnvSQLitePath + "=" + path, fncloudrun.EnvLogLevel + "=debug",
		fncloudrun.EnvKMSKeys + "=k1=" + key1, fncloudrun.EnvKMSEndpoint + "=" + kms.Endpoint})
	l := jobsLauncher(t, fake)
	kr := hostKeyring(t, kms, [2]string{"k1", key1})
	store, b, err := payload.OpenURL(t.Context(), bucket.SigningBlobURL(), kr, nil)
	if err != nil {
		t.Fatalf("payload.OpenURL = %v", err)
	}
	t.Cleanup(func() { b.Close() })
	e := sortie.NewEngine(cp, l, probeAgents, &sortie.EngineOptions{DefaultPolicy: testPolicy, Payloads: store,
		Sealer: payload.NewGranter(store, kr), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { e.Close() })

	doc := func(n int) string { return strings.Repeat(payloadCanary+" ", n/(len(payloadCanary)+1)) }
	small, _ := json.Marshal(map[string]any{"events": 1, "document": doc(100 << 10)})
	large, _ := json.Marshal(map[string]any{"events": 1, "output": doc(5 << 20)})
	var runs []*sortie.Run
	for _, vars := range [][]byte{small, large} {
		run, err := e.Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: vars})
		if err != nil || run.VariablesRef == nil {
			t.Fatalf("Submit(%d bytes of variables) = %v, %v; want them kept by reference", len(vars), run, err)
		}
		run = waitRun(t, e, run.ID, "run "+string(run.ID)+" to settle", false, settled)
		if run.State != sortie.StateCompleted {
			t.Fatalf("run with %d bytes of variables = %s %q, want completed", len(vars), run.State, run.Reason)
		}
		runs = append(runs, run)
	}
	got, err := e.Get(t.Context(), runs[1].ID)
	var out string
	if err != nil || got.ResultRef == nil || json.Unmarshal(got.Result, &out) != nil || out != doc(5<<20) {
		t.Fatalf("Get(the 5 MB run) = result ref %v, %d bytes, %v; want the 5 MB output back, kept by reference", got.ResultRef, len(got.Result), err)
	}

	texts := map[string][]byte{"the containers' logs": []byte(fake.outputs())}
	var secrets []string
	for i, r := range fake.requests() {
		texts[fmt.Sprintf("RunJobRequest %d", i+1)] = []byte(r.String())
		for _, v := range r.GetOverrides().GetContainerOverrides()[0].GetEnv() {
			if v.GetName() != fncloudrun.EnvInvocation {
				continue
			}
			inv, err := sortie.DecodeInvocation([]byte(v.GetValue()))
			if err != nil || inv.VariablesRef == nil || len(inv.SealedPayloadURLs) == 0 || len(v.GetValue()) > fncloudrun.MaxEnvValueBytes {
				t.Fatalf("RunJobRequest %d's invocation: %d bytes, %v; want a reference and sealed URLs within %d bytes", i+1, len(v.GetValue()), err, fncloudrun.MaxEnvValueBytes)
			}
			urls, _, err := sealed.OpenURLs(t.Context(), kr, inv)
			if err != nil {
				t.Fatalf("OpenURLs = %v", err)
			}
			for _, u := range append(slices.Collect(maps.Values(urls.Get)), slices.Collect(maps.Values(urls.Put))...) {
				_, sig, _ := strings.Cut(u, "X-Amz-Signature=")
				secrets = append(secrets, sig)
			}
		}
	}
	if want := 2 * (3 + sortie.MaxStepSlots); len(secrets) != want {
		t.Fatalf("the RunJob requests carried %d URL signatures, want %d (a GET of the variables, PUTs of the result, the checkpoint and %d step slots, for each run)", len(secrets), want, sortie.MaxStepSlots)
	}
	for _, run := range runs {
		stored, _ := cp.Get(t.Context(), run.ID)
		texts["run "+string(run.ID)], _ = json.Marshal(stored)
		evs, _ := cp.Events(t.Context(), run.ID, sortie.Cursor{}, 100)
		texts["events of "+string(run.ID)], _ = json.Marshal(evs)
	}
	for k, v := range bucket.Objects(t) {
		texts["object "+k] = v
	}
	for what, b := range texts {
		for i, s := range append([]string{payloadCanary}, secrets...) {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds secret %d (0: the canary, then URL signatures) in plaintext", what, i)
			}
		}
	}
}

// The host (package host, as sortie serve builds it) launching on the
// Job with a payload bucket and its Cloud KMS keyring grants the URLs
// itself: a 100 KB variable goes by reference, and a 300 KB result
// (over sortie.MaxResultBytes) comes back by reference from a container
// that has no control plane and reports over the host's callbacks; so do
// a checkpoint and a resume input (resumeOverCallbacks) and large steps
// (stepsOverCallbacks).
func TestHostJobPayloadsOverCallbacks(t *testing.T) {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "AKIDHOSTSIGNER", "AWS_SECRET_ACCESS_KEY": "host-signer-secret",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	kms := cloudkms.Start(t, key1)
	bucket := s3test.Start(t, "payloads")
	fake := startFakeEnv(t, []string{fncloudrun.EnvLogLevel + "=debug", fncloudrun.EnvKMSKeys + "=k1=" + key1,
		fncloudrun.EnvKMSEndpoint + "=" + kms.Endpoint})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := host.Config{StateDir: t.TempDir(), Agents: probeAgents, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		GCP:           gcphost.Config{Job: testJob, RunEndpoint: fake.addr, KMSKeys: [][2]string{{"k1", key1}}, KMSEndpoint: kms.Endpoint},
		PayloadBucket: bucket.SigningBlobURL(),
		API:           &host.API{WorkerCallbacks: true, CallbackURL: "http://" + ln.Addr().String()}}
	h, err := host.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("host.New(GCP Job with a payload bucket) = %v", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx, ln) }()
	t.Cleanup(func() { stop(); <-served; h.Close() })

	output := strings.Repeat(payloadCanary+" ", 300<<10/(len(payloadCanary)+1))
	vars, _ := json.Marshal(map[string]any{"events": 1, "document": strings.Repeat("d", 100<<10), "output": output})
	run, err := h.Client().Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: vars})
	if err != nil || run.VariablesRef == nil {
		t.Fatalf("Submit(%d bytes of variables) = %v, %v; want them kept by reference", len(vars), run, err)
	}
	run = waitRun(t, h.Engine(), run.ID, "run "+string(run.ID)+" to settle", false, settled)
	var out string
	if run.State != sortie.StateCompleted || run.ResultRef == nil || json.Unmarshal(run.Result, &out) != nil || out != output {
		t.Fatalf("run = %s %q, result ref %v, %d bytes; want completed with the 300 KB output back, kept by reference", run.State, run.Reason, run.ResultRef, len(run.Result))
	}
	resumeOverCallbacks(t, h, output)
	stepsOverCallbacks(t, h, bucket)
	for k, v := range bucket.Objects(t) {
		if bytes.Contains(v, []byte(payloadCanary)) {
			t.Errorf("object %s holds the canary in plaintext", k)
		}
	}
}

// resumeOverCallbacks: a container reporting over callbacks interrupts
// with a 300 KB checkpoint (kept by reference through its PUT URL, the
// callback carrying checkpoint_ref), the host keeps a 300 KB resume input,
// and the resumed container reads both through its GET URLs.
func resumeOverCallbacks(t *testing.T, h *host.Host, checkpoint string) {
	t.Helper()
	vars, _ := json.Marshal(map[string]any{"events": 0, "interrupt": "input-required", "output": checkpoint})
	run, err := h.Client().Submit(t.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: vars})
	if err != nil {
		t.Fatalf("Submit(interrupting) = %v", err)
	}
	paused := waitRun(t, h.Engine(), run.ID, "run "+string(run.ID)+" to pause", false, settled)
	if paused.State != sortie.StateInputRequired || paused.Interrupt.CheckpointRef == nil {
		t.Fatalf("run = %s %q, interrupt %+v; want input-required with its checkpoint by reference", paused.State, paused.Reason, paused.Interrupt)
	}
	input, _ := json.Marshal(map[string]string{"answer": checkpoint})
	if _, err := h.Client().Resume(t.Context(), run.ID, input); err != nil {
		t.Fatalf("Resume(%d bytes) = %v", len(input), err)
	}
	done := waitRun(t, h.Engine(), run.ID, "run "+string(run.ID)+" to end", false, func(r *sortie.Run) bool { return r.State.Terminal() })
	var out struct {
		ResumedWith json.RawMessage `json:"resumed_with"`
		Checkpoint  string          `json:"checkpoint"`
	}
	if done.State != sortie.StateCompleted || json.Unmarshal(done.Result, &out) != nil || !bytes.Equal(out.ResumedWith, input) || out.Checkpoint != checkpoint {
		t.Fatalf("resumed run = %s %q; want completed, the handler having seen the %d-byte input and the checkpoint exactly", done.State, done.Reason, len(input))
	}
}
