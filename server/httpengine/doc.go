// Package httpengine is the HTTP transport of the Go client: an [Engine]
// is a [sortie.ExecutionEngine] (and a [sortie.Streamer]) that talks to a
// host's API served by package server (`sortie serve`), so
// sortie.NewClient(httpengine.New(url, nil)) behaves as a client of an
// embedded engine: Submit, Get, List, Events, Cancel, Resume, Delete, and Follow
// over Server-Sent Events that reconnects after the last event, losing and
// repeating nothing.
//
// Errors wrap the sortie sentinels the host answered with (the error
// body's code, mapped back by [wire.Sentinel]), input errors are
// [*sortie.ValidationError] naming the field, and a missing or wrong API
// token is [ErrUnauthenticated]. It reads the API's bodies from package
// wire, so a client links none of the server.
package httpengine
