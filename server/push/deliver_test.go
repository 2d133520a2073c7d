package push_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/push"
)

// Each state change of a run is delivered signed, in order, with its
// deterministic webhook-id; the terminal one ends the configuration.
// The sweep is off (1 h), so Notify alone drives the deliveries.
func TestEachChangeIsDeliveredSignedAndTheTerminalOneEnds(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, e.secrets["primary"], nil, nil)
	opts := testOptions()
	opts.SweepInterval = time.Hour
	h := e.start(nil, opts)
	run := e.submit(nil)
	e.put(run.ID, "hook", rc.url("/hook"), "")
	h.d.Notify(run.ID)
	e.waitDelivered(run.ID, "hook", 1)
	c := e.launch(run.ID) // two changes: launch recorded, attempt claimed
	h.d.Notify(run.ID)
	e.waitDelivered(run.ID, "hook", 3)
	final := e.finish(c, sortie.Outcome{Result: json.RawMessage(`{"words":42}`)})
	h.d.Notify(run.ID)
	got := e.waitCfg(run.ID, "hook", "done", func(d sortie.PushDelivery) bool { return d.Done })
	if diff := cmp.Diff(sortie.PushDelivery{DeliveredVersion: final.Version, Done: true}, got); diff != "" {
		t.Errorf("delivery progress after the terminal delivery (-want +got):\n%s", diff)
	}
	reqs := rc.requests()
	var states []sortie.State
	for i, r := range reqs {
		if r.Verify != nil {
			t.Errorf("delivery %d: receiver's Verify = %v, want nil", i+1, r.Verify)
		}
		v := r.Payload.Data.Run.Version
		if want := push.MessageID(run.ID, "hook", v); r.ID != want {
			t.Errorf("delivery %d webhook-id = %q, want MessageID(run, hook, %d) = %q", i+1, r.ID, v, want)
		}
		if r.Payload.Type != push.EventRunUpdated || r.Payload.TimestampMs == 0 {
			t.Errorf("delivery %d type %q timestamp_ms %d, want %q and a time", i+1, r.Payload.Type, r.Payload.TimestampMs, push.EventRunUpdated)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("delivery %d Content-Type = %q, want application/json", i+1, ct)
		}
		states = append(states, r.Payload.Data.Run.State)
	}
	if diff := cmp.Diff([]int64{1, 3, final.Version}, rc.versions()); diff != "" {
		t.Errorf("delivered versions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]sortie.State{sortie.StateSubmitted, sortie.StateWorking, sortie.StateCompleted}, states); diff != "" {
		t.Errorf("delivered states (-want +got):\n%s", diff)
	}
	last := reqs[len(reqs)-1].Payload.Data.Run
	if diff := cmp.Diff(push.PublicRun(e.get(run.ID)), last); diff != "" {
		t.Errorf("last delivered run vs PublicRun(Get) (-want +got):\n%s", diff)
	}
}

// A run changing faster than it is delivered: every delivery carries a
// newer version than the one before, and the terminal one arrives.
func TestRapidChangesArriveInOrderWithTheTerminalLast(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, e.secrets["primary"], nil, nil)
	h := e.start(nil, testOptions())
	run := e.submit(nil)
	e.put(run.ID, "hook", rc.url("/hook"), "")
	h.d.Notify(run.ID)
	for range 4 {
		c := e.launch(run.ID)
		h.d.Notify(run.ID)
		e.finish(c, sortie.Outcome{Error: &sortie.ErrorMessage{Type: "boom", Message: "try again", Retryable: true}})
		h.d.Notify(run.ID)
	}
	final := e.finish(e.launch(run.ID), sortie.Outcome{Result: json.RawMessage(`1`)})
	h.d.Notify(run.ID)
	e.waitCfg(run.ID, "hook", "done", func(d sortie.PushDelivery) bool { return d.Done })
	vs := rc.versions()
	for i := 1; i < len(vs); i++ {
		if vs[i] <= vs[i-1] {
			t.Fatalf("delivered versions %v: %d after %d, want strictly increasing", vs, vs[i], vs[i-1])
		}
	}
	if len(vs) == 0 || vs[len(vs)-1] != final.Version {
		t.Fatalf("delivered versions %v, want the last to be the terminal version %d", vs, final.Version)
	}
	if n := len(rc.requests()); n != len(vs) {
		t.Errorf("%d requests for %d deliveries, want no failed or extra request", n, len(vs))
	}
}

// A heartbeat changes the version, the update time and the lease only:
// nothing a receiver sees, so it is not sent on its own.
func TestHeartbeatAloneIsNotSent(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, e.secrets["primary"], nil, nil)
	opts := testOptions()
	opts.SweepInterval = time.Hour
	h := e.start(nil, opts)
	run := e.submit(nil)
	e.put(run.ID, "hook", rc.url("/hook"), "")
	c := e.launch(run.ID)
	h.d.Notify(run.ID)
	claimed := e.waitDelivered(run.ID, "hook", e.get(run.ID).Version)
	// The versions before the claim may have gone out one by one or
	// together, depending on when the dispatcher woke: count from here.
	sent := len(rc.requests())
	c.NowMs = time.Now().UnixMilli()
	if _, err := e.cp.Heartbeat(e.ctx, c); err != nil {
		t.Fatalf("Heartbeat = %v", err)
	}
	h.d.Notify(run.ID)
	e.barrier(h, run.ID)
	if got := e.cfg(run.ID, "hook").Delivery; got.DeliveredVersion != claimed.DeliveredVersion || len(rc.requests()) != sent {
		t.Errorf("after a heartbeat: delivered version %d and %d requests, want %d and %d (not sent)",
			got.DeliveredVersion, len(rc.requests()), claimed.DeliveredVersion, sent)
	}
	final := e.finish(c, sortie.Outcome{Result: json.RawMessage(`1`)})
	h.d.Notify(run.ID)
	e.waitDelivered(run.ID, "hook", final.Version)
}

// The body holds no sealed configuration, request hash, resume input,
// checkpoint or launch ID of the stored run.
func TestBodyHoldsNoSecrets(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, e.secrets["primary"], nil, nil)
	h := e.start(nil, testOptions())
	run := e.submit(func(r *sortie.Run) {
		r.SealedConfig = json.RawMessage(`{"ciphertext":"SEALED-SECRET"}`)
		r.RequestHash = "HASH-SECRET"
	})
	c := e.launch(run.ID)
	e.finish(c, sortie.Outcome{Interrupt: &sortie.Interrupt{State: sortie.StateInputRequired,
		Prompt: "which file?", Checkpoint: json.RawMessage(`"CHECKPOINT-SECRET"`)}})
	resumed, err := e.cp.Resume(e.ctx, run.ID, json.RawMessage(`"RESUME-SECRET"`))
	if err != nil {
		t.Fatalf("Resume = %v", err)
	}
	if len(resumed.SealedConfig) == 0 || resumed.RequestHash == "" || len(resumed.ResumeInput) == 0 {
		t.Fatalf("stored run lacks the fields under test: %+v", resumed)
	}
	e.put(run.ID, "hook", rc.url("/hook"), "")
	h.d.Notify(run.ID)
	e.waitDelivered(run.ID, "hook", resumed.Version)
	reqs := rc.requests()
	body := reqs[len(reqs)-1].Body
	for _, s := range []string{"sealed_config", "request_hash", "resume_input", "checkpoint",
		"SEALED-SECRET", "HASH-SECRET", "RESUME-SECRET", "CHECKPOINT-SECRET", c.LaunchID, "launch_id"} {
		if bytes.Contains(body, []byte(s)) {
			t.Errorf("delivered body contains %q, want it omitted:\n%s", s, body)
		}
	}
	if !strings.Contains(string(body), `"attempts":[{"number":1,`) {
		t.Errorf("delivered body %s lacks the attempt", body)
	}
	if !strings.Contains(string(body), "which file?") {
		t.Errorf("delivered body %s lacks the interrupt's prompt", body)
	}
}

// A configuration's KeyID picks the signing key: a receiver holding only
// that key's secret verifies the delivery.
func TestKeyIDPicksTheSigningKey(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, e.secrets["second"], nil, nil)
	h := e.start(nil, testOptions())
	run := e.submit(nil)
	e.put(run.ID, "hook", rc.url("/hook"), "second")
	h.d.Notify(run.ID)
	e.waitDelivered(run.ID, "hook", 1)
	if r := rc.requests()[0]; r.Verify != nil {
		t.Errorf("Verify with the second key's secret = %v, want nil", r.Verify)
	}
}

// A configuration naming a key the host does not have fails for good at
// once, and nothing is sent.
func TestUnknownKeyIDFailsPermanently(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, e.secrets["primary"], nil, nil)
	h := e.start(nil, testOptions())
	run := e.submit(nil)
	e.put(run.ID, "hook", rc.url("/hook"), "retired")
	h.d.Notify(run.ID)
	got := e.waitCfg(run.ID, "hook", "done", func(d sortie.PushDelivery) bool { return d.Done })
	want := sortie.PushDelivery{Done: true, LastError: `unknown webhook signing key "retired"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivery progress with an unknown key ID (-want +got):\n%s", diff)
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("receiver got %d requests, want 0", n)
	}
}
