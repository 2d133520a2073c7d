package remotetest_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote/remotetest"
)

// Start a host in this process and run the probe agent on it.
func ExampleStart() {
	h, err := remotetest.Start(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	ctx := context.Background()
	run, err := h.Client.Submit(ctx, &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{"events":1}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	run, err = h.Client.Wait(ctx, run.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(run.State, string(run.Result))
	// Output: completed {"attempt":1,"events":1}
}
