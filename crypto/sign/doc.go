// Package sign signs and verifies requests per the Standard Webhooks
// spec (standardwebhooks.com): callbacks from workers and webhooks to
// clients carry the headers webhook-id, webhook-timestamp (Unix seconds)
// and webhook-signature, a space-separated list of "v1,<base64>" entries,
// each the HMAC-SHA256 of "id.timestamp.body" under one secret
// ("whsec_" + base64; see [ParseSecret] and [NewSecret]).
//
// A [Signer] signs with every secret it holds, so during a rotation it
// signs with the old and the new one and verifiers holding either accept.
// A [Verifier] accepts a signature by any of its secrets, compared in
// constant time, refuses a timestamp further than the tolerance (default
// 5 minutes) from its clock, and then records the message ID in a
// [ReplayCache] so the same message is accepted once; [MemoryReplayCache]
// is the in-memory, size-bounded implementation, and a
// [StoreReplayCache] (controlplane/dynamo's ReplayCache, in the table
// every replica shares) is one in a store that may fail, which
// [Verifier.VerifyContext] asks with the request's context.
//
// A sender redelivers a message with the same ID when it did not see the
// answer, so a replay of an accepted ID means "already processed": a
// receiver answers it 2xx, not 401. [Verifier.Middleware] is such a
// receiver, and [StatusOf] maps each error to the status to answer.
//
// Message IDs are limited to printable ASCII without spaces or '.', so the
// signed content "id.timestamp.body" splits one way only.
package sign
