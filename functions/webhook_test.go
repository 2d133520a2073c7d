package functions_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/internal/hooktest"
	"github.com/sortie-run/sortie/launchers/local"
)

// A webhook step to a destination the policy refuses fails before any
// connection: the listener accepts nothing, the step is not recorded and
// the attempt fails, not retryable.
func TestWebhookStepToRefusedDestination(t *testing.T) {
	hook := hooktest.Start(t, mustSecret(t))
	w := stdioWorker()
	w.Webhooks = &functions.WebhookExecutor{} // the worker's destinations: none
	cp := memory.New()
	defer cp.Close()
	inv := launched(t, cp, `{"events":0,"webhook":"`+hook.URL+`"}`)
	o, err := w.Execute(t.Context(), inv, functions.NewControlPlaneReporter(cp, inv, "webhook-test"))
	if err != nil || o.Error == nil || o.Error.Retryable || !strings.Contains(o.Error.Message, "destination: 127.0.0.1 refused") {
		t.Fatalf("Execute = %+v, %v; want a permanent error naming the refused destination", o, err)
	}
	if n := hook.Accepts.Load(); n != 0 {
		t.Errorf("the listener accepted %d connections, want none", n)
	}
	if steps, _ := cp.Steps(t.Context(), inv.RunID); len(steps) != 0 {
		t.Errorf("steps recorded = %+v, want none", steps)
	}
}

// A failed webhook step's error, which the run keeps, quotes its URL
// without the query (a receiver's token) or user info.
func TestWebhookStepErrorHidesURLSecrets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // a transport error: connection refused
	w := stdioWorker()
	w.Webhooks = &functions.WebhookExecutor{Destinations: destination.LoopbackHTTP()}
	cp := memory.New()
	defer cp.Close()
	inv := launched(t, cp, `{"events":0,"webhook":"http://user:PWSECRET@`+closed+`/hook?token=QSECRET"}`)
	o, err := w.Execute(t.Context(), inv, functions.NewControlPlaneReporter(cp, inv, "webhook-test"))
	if err != nil || o.Error == nil {
		t.Fatalf("Execute = %+v, %v; want the step's error", o, err)
	}
	if m := o.Error.Message; strings.Contains(m, "QSECRET") || strings.Contains(m, "PWSECRET") || !strings.Contains(m, closed+"/hook") {
		t.Errorf("error %q: want the URL's path without its query or password", m)
	}
}

// An allowed webhook step is signed (the receiver verifies it), recorded
// as a step, and replayed by the run's next attempt without another
// request.
func TestWebhookStepSignedAndReplayed(t *testing.T) {
	secret := mustSecret(t)
	hook := hooktest.Start(t, secret)
	signer, err := sign.NewSigner(secret)
	if err != nil {
		t.Fatal(err)
	}
	reg := functions.NewRegistry()
	reg.Register("hooker", func(ctx context.Context, c *functions.Call) (any, error) {
		resp, err := c.Webhook(ctx, "notify", functions.WebhookRequest{URL: hook.URL, Body: json.RawMessage(`{"n":1}`)})
		if err != nil || c.Attempt() == 1 {
			return nil, errors.Join(err, errors.New("attempt 1 fails after the webhook step"))
		}
		return resp, nil
	})
	w := &functions.Worker{Registry: reg, Webhooks: &functions.WebhookExecutor{Destinations: destination.LoopbackHTTP(), Signer: signer}}
	cp := memory.New()
	defer cp.Close()
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, "webhook-test"))
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	agents := sortie.Agents{"hooker": {Name: "hooker", Runtime: "go:hooker", Policy: sortie.Policy{BackoffMs: 1}}}
	e := sortie.NewEngine(cp, l, agents, nil)
	defer e.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go e.RunReconciler(ctx, 5*time.Millisecond) // launches the retry
	client := sortie.NewClient(e, &sortie.ClientOptions{PollInterval: 10 * time.Millisecond})
	run, err := client.Submit(ctx, &sortie.SubmitRequest{Agent: "hooker"})
	if err != nil {
		t.Fatal(err)
	}
	final, err := client.Wait(ctx, run.ID)
	if err != nil || final.State != sortie.StateCompleted || final.Attempt != 2 || !strings.Contains(string(final.Result), `"status":200`) {
		t.Fatalf("Wait = %+v, %v; want completed on attempt 2 with the recorded answer", final, err)
	}
	if n := hook.Verified.Load(); n != 1 {
		t.Errorf("the receiver verified %d signed requests, want 1 (attempt 2 replays the step)", n)
	}
}

// Without an executor (worker mode's default) a webhook step is refused.
func TestWebhookStepsOffByDefault(t *testing.T) {
	hook := hooktest.Start(t, mustSecret(t))
	w := stdioWorker()
	w.Destinations = destination.LoopbackHTTP() // the handlers' client may go there, webhook steps may not
	cp := memory.New()
	defer cp.Close()
	inv := launched(t, cp, `{"events":0,"webhook":"`+hook.URL+`"}`)
	o, err := w.Execute(t.Context(), inv, functions.NewControlPlaneReporter(cp, inv, "webhook-test"))
	if err != nil || o.Error == nil || !strings.Contains(o.Error.Message, "no webhook steps") || hook.Accepts.Load() != 0 {
		t.Fatalf("Execute = %+v, %v, %d accepts; want a refusal before any connection", o, err, hook.Accepts.Load())
	}
}

func mustSecret(t *testing.T) string {
	s, err := sign.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
