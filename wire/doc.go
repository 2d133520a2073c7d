// Package wire is the HTTP wire format that Sortie's servers and their
// clients share, so each side reads what the other writes from one
// definition:
//
//   - the error body of every refusal, [ErrorBody]
//     ({"error": {"code", "message", "field"}}), its stable codes (the Code
//     constants), and the table between codes and the sortie sentinels in
//     both directions ([ForError] on the server, [Sentinel] and [Err] on
//     the client), so errors.Is(err, sortie.ErrNotFound) holds on both
//     sides of the wire;
//   - the request and answer bodies of the host API that are not sortie
//     types themselves ([CancelRequest], [EventsPage], ...) and its
//     [IdempotencyKeyHeader].
//
// Package server (the host API) and server/callback (worker callbacks)
// write it; server/httpengine (the Go client of the host API) and
// functions (the worker's callback reporter) read it. It imports only the
// root package sortie, so a client does not link the server.
package wire
