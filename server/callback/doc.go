// Package callback implements the worker callback routes: workers that
// report over HTTPS instead of writing the control plane claim their
// attempt, heartbeat, send events and complete through a [Handler],
// authenticated per run and attempt.
//
// # Credentials
//
// The host holds a [Keyring] of callback keys ([NewKey], [ParseKeyring]):
// the primary issues, every key verifies, so tokens issued before a
// rotation keep working until their key is removed. An [Issuer] (the
// engine's sortie.ReportIssuer) gives each attempt a report with the
// callback URL (the host's base URL + [PathPrefix]) and a token
// CLAIMS.SECRET:
//
//   - [Claims]: version, key ID, run ID, attempt, launch ID and expiry
//     (the attempt's deadline + [DefaultGrace]), the base64url of their
//     JSON, in canonical form ([ParseClaims]);
//   - the attempt secret: HMAC-SHA256(host key, "sortie.callback.v1" +
//     CLAIMS), 32 bytes, base64url.
//
// The worker (functions.NewCallbackReporter) sends the claims in header
// [HeaderAttempt] and signs every request's body with the attempt secret
// per Standard Webhooks (crypto/sign: webhook-id, webhook-timestamp,
// webhook-signature), with a fresh webhook-id per request and per retry.
// The secret itself is never sent again. The host keeps no per-attempt
// state: it recomputes the secret from the claims and its key.
//
// # Checks, in order
//
// Route (404) and method (405, POST only); body size (413:
// [MaxClaimBodyBytes] for claim, [MaxEmptyBodyBytes] for heartbeat,
// [MaxEventsBodyBytes], [MaxCompleteBodyBytes]); claims present and well-formed, key ID in the
// keyring (named in the error), not expired; signature by the attempt
// secret, timestamp within the tolerance (default 5 minutes either way);
// webhook-id not seen before (each a 401); then the body against the
// route's embedded JSON Schema (draft 2020-12) and the sortie types' own
// rules (400 naming the field, e.g. "events[0].seq"). Only then is the
// control plane called, with the run, attempt and launch ID of the
// verified claims, never the body's, and owner [Owner].
//
// A replayed request (a webhook-id already accepted, within the
// tolerance) is a 401 with code [CodeReplayed]: it is an authentication
// failure like the others, and a worker never replays, since its retries
// carry fresh IDs. A request refused anywhere stores nothing.
//
// Control-plane errors become 409 with code [wire.CodeConflict],
// [wire.CodeCancelRequested] or [wire.CodeTerminal], 404, 400 or 503 (the
// table of package wire), which the worker maps back to the sortie
// sentinels. Every error is JSON ([wire.ErrorBody]); refusals are logged
// with log/slog, never with a token, a secret or a body.
//
// Routes: POST [PathClaim] ([ClaimRequest]: {} or the worker's compute
// shape, stored on the attempt; answer [HeartbeatResponse]),
// [PathHeartbeat] (body {}, answer [HeartbeatResponse]), [PathEvents] ([EventsRequest], answer
// [EventsResponse]), [PathStep] ([StepRequest], answer [StepResponse]),
// [PathSteps] (body {}, answer [StepsResponse], to the claimed, live
// attempt only), [PathComplete] ([CompleteRequest], answer
// [CompleteResponse]).
package callback
