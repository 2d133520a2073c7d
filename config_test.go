package sortie_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/internal/envelopetest"
	"github.com/sortie-run/sortie/launchers/local"
)

const hunter = "hunter2-secret-value"

func TestParseConfig(t *testing.T) {
	got, err := sortie.ParseConfig([]byte(`{"API_TOKEN":"` + hunter + `","_X1":"12345678"}`))
	if diff := cmp.Diff(map[string]string{"API_TOKEN": hunter, "_X1": "12345678"}, got); err != nil || diff != "" {
		t.Fatalf("ParseConfig(valid) = %v (-want +got):\n%s", err, diff)
	}
	many := map[string]string{}
	for i := range sortie.MaxConfigEntries + 1 {
		many[fmt.Sprintf("V%d", i)] = hunter
	}
	manyJSON, _ := json.Marshal(many)
	for name, in := range map[string]string{
		"array":       `["` + hunter + `"]`,
		"number":      `{"API_TOKEN":12345}`,
		"object":      `{"API_TOKEN":{"v":"` + hunter + `"}}`,
		"bad name":    `{"api-token":"` + hunter + `"}`,
		"digit first": `{"1TOKEN":"` + hunter + `"}`,
		"NUL":         `{"API_TOKEN":"` + hunter + `\u0000"}`,
		"truncated":   `{"API_TOKEN":"` + hunter,
		"too large":   `{"API_TOKEN":"` + strings.Repeat(hunter, sortie.MaxConfigBytes/len(hunter)) + `"}`,
		"too many":    string(manyJSON),
		"too short":   `{"API_TOKEN":"` + hunter + `","PIN":"1234567"}`,
		"empty":       `{"API_TOKEN":""}`,
		"twice":       `{"API_TOKEN":"` + hunter + `","API_TOKEN":"12345678"}`,
	} {
		_, err := sortie.ParseConfig([]byte(in))
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "config" {
			t.Errorf("ParseConfig(%s) = %v, want a *ValidationError for field config", name, err)
		} else if strings.Contains(err.Error(), hunter) || strings.Contains(err.Error(), "hunter") {
			t.Errorf("ParseConfig(%s) error %q shows the value", name, err)
		}
	}
}

// sealRig is an engine over the memory control plane whose in-process
// launcher records each invocation and runs the probe worker.
type sealRig struct {
	cp     *memory.ControlPlane
	engine *sortie.Engine
	client *sortie.Client
	mu     sync.Mutex
	invs   []*sortie.Invocation
}

func newSealRig(t *testing.T, sealer sortie.Sealer, opener functions.Opener) *sealRig {
	t.Helper()
	reg := functions.NewRegistry()
	probe.Register(reg)
	w := &functions.Worker{Registry: reg}
	if opener != nil {
		w.InlineConfig = &functions.InlineConfig{Opener: opener, Allow: []string{"API_TOKEN"}}
	}
	r := &sealRig{cp: memory.New()}
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		r.mu.Lock()
		r.invs = append(r.invs, inv)
		r.mu.Unlock()
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(r.cp, inv, "test"))
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.engine = sortie.NewEngine(r.cp, l, probeAgent, &sortie.EngineOptions{Sealer: sealer})
	r.client = sortie.NewClient(r.engine, &sortie.ClientOptions{PollInterval: 10 * time.Millisecond})
	t.Cleanup(func() { r.engine.Close(); l.Close(); r.cp.Close() })
	return r
}

func (r *sealRig) submit(config, vars, key string) (*sortie.Run, error) {
	return r.client.Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe",
		Variables: json.RawMessage(vars), Config: json.RawMessage(config), IdempotencyKey: key})
}

// terminal reconciles (the retry needs it) until the run is terminal.
func (r *sealRig) terminal(t *testing.T, id sortie.RunID) *sortie.Run {
	t.Helper()
	return reconcileUntil(t, r.cp, r.engine, id, "a terminal state", func(run *sortie.Run) bool { return run.State.Terminal() })
}

func localConfig(t *testing.T) *envelope.Config {
	t.Helper()
	return envelopetest.Config(t, "local")
}

// onlySealer is a Sealer that cannot keep configuration at rest.
type onlySealer struct{}

func (onlySealer) Seal(context.Context, *sortie.Invocation) error { return nil }

func TestInlineConfigIsOffWithoutAConfigSealer(t *testing.T) {
	for name, sealer := range map[string]sortie.Sealer{"no sealer": nil, "sealer without SealConfig": onlySealer{}} {
		r := newSealRig(t, sealer, nil)
		_, err := r.submit(`{"API_TOKEN":"`+hunter+`"}`, `{}`, "")
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "config" || !strings.Contains(err.Error(), "off") {
			t.Errorf("%s: Submit(config) = %v, want a *ValidationError for config saying it is off", name, err)
		}
		if page, err := r.client.List(context.Background(), sortie.ListQuery{}); err != nil || len(page.Runs) != 0 {
			t.Errorf("%s: after a refused submission List() = %d runs, %v; want none", name, len(page.Runs), err)
		}
		if _, err := r.submit(`null`, `{}`, ""); err != nil {
			t.Errorf("%s: Submit(config null) = %v, want it taken as no configuration", name, err)
		}
	}
}

// The run keeps the configuration sealed at rest; each attempt gets its own
// envelope, re-sealed from that copy; the worker opens it.
func TestEngineReSealsConfigForEachAttempt(t *testing.T) {
	cfg := localConfig(t)
	r := newSealRig(t, cfg, cfg)
	run, err := r.submit(`{"API_TOKEN":"`+hunter+`"}`, `{"events":1,"fail":"flaky","retryable":true,"fail_attempts":1}`, "")
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	if len(run.SealedConfig) == 0 || bytes.Contains(run.SealedConfig, []byte(hunter)) {
		t.Fatalf("submitted run carries sealed config %s, want an envelope without the plaintext", run.SealedConfig)
	}
	final := r.terminal(t, run.ID)
	if final.State != sortie.StateCompleted || len(final.Attempts) != 2 {
		t.Fatalf("run %s ended %s after %d attempts (%+v), want completed after 2", run.ID, final.State, len(final.Attempts), final.Error)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.invs) != 2 || bytes.Equal(r.invs[0].SealedConfig, r.invs[1].SealedConfig) ||
		bytes.Equal(r.invs[0].SealedConfig, final.SealedConfig) {
		t.Fatalf("the %d invocations do not carry one envelope per attempt, each unlike the copy at rest", len(r.invs))
	}
	for _, inv := range r.invs {
		if got, _, err := cfg.Open(context.Background(), inv); err != nil || !bytes.Contains(got, []byte(hunter)) {
			t.Errorf("Open(attempt %d) = %v, want the configuration", inv.Attempt, err)
		}
	}
}

// The configuration is not part of the request hash: no digest of a
// secret is stored, and a resubmission with the key returns the run.
func TestConfigIsNotInTheRequestHash(t *testing.T) {
	r := newSealRig(t, localConfig(t), nil)
	a, err := r.submit(`{"API_TOKEN":"token-one"}`, `{"events":0}`, "k")
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.submit(`{"API_TOKEN":"token-two"}`, `{"events":0}`, "k")
	if err != nil || b.ID != a.ID {
		t.Fatalf("Submit(same key, other config) = %v, %v; want run %s", b, err, a.ID)
	}
	plain := &sortie.SubmitRequest{Agent: "probe", IdempotencyKey: "k"}
	withCfg := *plain
	withCfg.Config = json.RawMessage(`{"API_TOKEN":"token-one"}`)
	if plain.Hash() != withCfg.Hash() {
		t.Error("Hash() differs with configuration, want it left out")
	}
}

// failSealer seals at rest but cannot re-seal for now: nothing is launched yet.
type failSealer struct{ *envelope.Config }

func (failSealer) Seal(context.Context, *sortie.Invocation) error {
	return fmt.Errorf("kms down: %w", sortie.ErrUnavailable)
}

func TestSealFailureRecordsNoLaunch(t *testing.T) {
	r := newSealRig(t, failSealer{localConfig(t)}, nil)
	run, err := r.submit(`{"API_TOKEN":"xxxxxxxx"}`, `{}`, "")
	if err != nil || run.State != sortie.StateSubmitted {
		t.Fatalf("Submit with a transiently failing Seal = %+v, %v; want the run reserved (the reconciler launches it later)", run, err)
	}
	page, err := r.client.List(context.Background(), sortie.ListQuery{})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].Attempt != 0 {
		t.Fatalf("List() = %+v, %v; want one reserved run with no launch recorded", page, err)
	}
}

// A value too short to mask is refused when the configuration is sealed,
// and the refusal names the variable, never the value.
func TestParseConfigRefusesShortValues(t *testing.T) {
	_, err := sortie.ParseConfig([]byte(`{"API_TOKEN":"` + hunter + `","PIN":"4711"}`))
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "PIN") || strings.Contains(err.Error(), "4711") {
		t.Fatalf("ParseConfig(a 4-byte PIN) = %v, want a ValidationError naming PIN without its value", err)
	}
}
