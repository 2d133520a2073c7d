package runs_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sortie-run/sortie/remote"
	"github.com/sortie-run/sortie/remote/remotetest"
	"github.com/sortie-run/sortie/remote/runs"
)

// Stream a run of a Sortie host as a remote task: its events, then the
// result.
func ExampleTransport_Stream() {
	host, err := remotetest.Start(nil) // an engine in this process; a remote host's HTTP engine works the same
	if err != nil {
		fmt.Println(err)
		return
	}
	defer host.Close()
	tr := runs.New(runs.Single("sortie://local", host.Engine), nil)
	req := &remote.CallRequest{AgentURL: "sortie://local", Skill: "probe", ContextID: "docs",
		Message: remote.Message{ID: "example-1", Data: json.RawMessage(`{"events":2}`)}}
	for ev, err := range tr.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Done {
			fmt.Println("done:", string(ev.Result))
			continue
		}
		fmt.Println(ev.Cursor, ev.Text)
	}
	// Output:
	// 1.1 event 1 of 2
	// 1.2 event 2 of 2
	// done: {"attempt":1,"events":2}
}
