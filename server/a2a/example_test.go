package a2a_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote/remotetest"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
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
