package a2a_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
	"github.com/sortie-run/sortie/remote/remotetest"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
	"github.com/sortie-run/sortie/server/push"
)

// Serve a host's agents to A2A clients, and call one with the a2a-go client.
func ExampleNew() {
	host, err := remotetest.Start(nil) // an engine with the probe agent
	if err != nil {
		fmt.Println(err)
		return
	}
	defer host.Close()
	handler, err := a2aserver.New(host.Engine, []sortie.Manifest{host.Agents["probe"]}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(handler) // `sortie serve` mounts it at the root
	defer srv.Close()

	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		fmt.Println(err)
		return
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"events": 2, "output": "done"}))
	msg.Metadata = map[string]any{a2aserver.SkillKey: "probe"}
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		fmt.Println(err)
		return
	}
	task := res.(*a2a.Task)
	fmt.Println(card.Skills[0].ID, task.Status.State, task.Artifacts[0].Parts[0].Text())
	// Output: probe TASK_STATE_COMPLETED done
}

// Seal the tokens of A2A push configurations with the host's envelope
// keeper, and give the push dispatcher the A2A message format and the
// token opener of the same sealer, as `sortie serve` does.
func ExampleEnvelopeSealer() {
	key := make([]byte, localkey.KeyBytes)
	rand.Read(key) // a host loads its key (localkey.LoadOrCreate) or uses a KMS
	kek, err := localkey.New(key)
	if err != nil {
		fmt.Println(err)
		return
	}
	ring, err := envelope.NewKeyring("host-key", kek)
	if err != nil {
		fmt.Println(err)
		return
	}
	sealer := a2aserver.EnvelopeSealer(envelope.New(ring, nil))
	// push.New(store, runs, client, keys, pushOpts), then
	// a2aserver.New(engine, agents, &a2aserver.Options{TokenSealer: sealer, PushChanged: dispatcher.Notify}).
	pushOpts := &push.Options{Formats: a2aserver.PushFormats(), OpenToken: a2aserver.TokenOpener(sealer)}

	ctx, run := context.Background(), sortie.NewRunID(time.Now())
	sealed, err := sealer.SealToken(ctx, run, "hook", []byte("receiver-token"))
	if err != nil {
		fmt.Println(err)
		return
	}
	token, err := pushOpts.OpenToken(ctx, &sortie.PushConfig{RunID: run, ID: "hook", SealedToken: sealed})
	fmt.Println(bytes.Contains(sealed, []byte("receiver-token")), token, err)
	// Output: false receiver-token <nil>
}
