package ui_test

import (
	"net/http"

	"github.com/sortie-run/sortie/server/ui"
)

// Mount the UI under /ui/ of a server over an API handler of one's own
// (package server does this with Options.UI). The API handler gets the
// UI's calls as /v1/runs... with the session's bearer token.
func ExampleNew() {
	var api http.Handler = http.NotFoundHandler() // the host API's routes, e.g. a *server.Server
	mux := http.NewServeMux()
	mux.Handle("/ui/", http.StripPrefix("/ui", ui.New(api, &ui.Options{LoopbackOnly: true})))
	mux.Handle("/", api)
	// Output:
}
