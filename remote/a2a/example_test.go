package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/remote"
	ra2a "github.com/sortie-run/sortie/remote/a2a"
	"github.com/sortie-run/sortie/remote/remotetest"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

// Call a skill of an A2A agent (here a Sortie host serving A2A on loopback).
func ExampleTransport_Send() {
	host, err := remotetest.Start(nil)
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
	srv := httptest.NewServer(handler)
	defer srv.Close()

	tr := ra2a.New(&ra2a.Options{Destinations: destination.LoopbackHTTP()})
	defer tr.Close()
	res, err := tr.Send(context.Background(), &remote.CallRequest{AgentURL: srv.URL, Skill: "probe",
		Message: remote.Message{Data: json.RawMessage(`{"events":1,"output":{"greeting":"hello"}}`)}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.Result))
	// Output: {"greeting":"hello"}
}
