package push_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/server/push"
)

// A host dispatching a run's change to a receiver that verifies the
// Standard Webhooks signature.
func Example() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // the host's key "primary"
	verifier, _ := sign.NewVerifier([]string{secret}, nil)
	got := make(chan string, 1)
	// Middleware refuses bad signatures (401) and acknowledges a
	// redelivery of a message already processed (200) without calling
	// the handler again.
	receiver := httptest.NewServer(verifier.Middleware(1<<20, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p push.Payload
		_ = json.NewDecoder(r.Body).Decode(&p)
		w.WriteHeader(http.StatusNoContent)
		got <- fmt.Sprintf("%s: %s, version %d", p.Type, p.Data.Run.State, p.Data.Run.Version)
	})))
	defer receiver.Close()

	cp := memory.New()
	keys, err := push.SecretKeys("primary", map[string][]string{"primary": {secret}})
	if err != nil {
		fmt.Println(err)
		return
	}
	// A host builds the client with destination.Policy.Client(); this
	// plain one reaches the loopback receiver.
	d, err := push.New(cp, cp, &http.Client{}, keys, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	go d.Run(context.Background())

	ctx, now := context.Background(), time.Now()
	run, _, _ := cp.Reserve(ctx, &sortie.Reservation{NowMs: now.UnixMilli(), Run: &sortie.Run{
		ID: sortie.NewRunID(now), Agent: sortie.Manifest{Name: "textstats", Runtime: "go:textstats"}}})
	_, err = cp.PutPushConfig(ctx, &sortie.PushConfig{RunID: run.ID, ID: "my-hook", URL: receiver.URL + "/hook"}, now.UnixMilli())
	if err != nil {
		fmt.Println(err)
		return
	}
	d.Notify(run.ID)
	fmt.Println(<-got)
	// Output: sortie.run.updated: submitted, version 1
}
