package remote_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sortie-run/sortie/remote"
	"github.com/sortie-run/sortie/remote/remotetest"
	"github.com/sortie-run/sortie/remote/runs"
)

// A Node forwards a message to a remote skill and reports what happened.
func ExampleNode() {
	host, err := remotetest.Start(nil) // a Sortie host in this process
	if err != nil {
		fmt.Println(err)
		return
	}
	defer host.Close()
	node := &remote.Node{
		Name:      "ask-probe",
		Transport: runs.New(runs.Single("sortie://local", host.Engine), nil),
		Skill:     "probe",
		AgentURL:  "sortie://local",
		Observer: remote.ObserverFunc(func(_ context.Context, o remote.Observation) {
			fmt.Println(o.Kind)
		}),
	}
	res, err := node.Call(context.Background(), remote.Message{Data: json.RawMessage(`{"events":1,"output":{"answer":42}}`)}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.Result))
	// Output:
	// remote_call_start
	// remote_call_success
	// {"answer":42}
}

// A paused remote task comes back as a typed error carrying its snapshot;
// a follow-up message with its task ID continues it.
func ExampleInputRequiredError() {
	host, err := remotetest.Start(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer host.Close()
	tr := runs.New(runs.Single("sortie://local", host.Engine), nil)
	ctx := context.Background()
	req := &remote.CallRequest{AgentURL: "sortie://local", Skill: "probe",
		Message: remote.Message{Data: json.RawMessage(`{"events":0,"interrupt":"input-required"}`)}}
	_, err = tr.Send(ctx, req)
	ire, ok := err.(*remote.InputRequiredError)
	if !ok {
		fmt.Println("unexpected:", err)
		return
	}
	fmt.Println(ire.Task.Status.State, "-", ire.Task.Status.Message)
	res, err := tr.Send(ctx, &remote.CallRequest{AgentURL: "sortie://local", TaskID: ire.Task.TaskID,
		Message: remote.Message{Text: "blue"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.Result))
	// Output:
	// input-required - need input
	// {"checkpoint":{"step":1},"resumed_with":{"text":"blue"}}
}
