// Package envelope seals and opens secret-bearing configuration with KMS
// envelope encryption: AES-256-GCM data keys wrapped by a key-encryption
// key, with key IDs, rotation and a bounded data-key cache.
//
// # Layers
//
// A [Keeper] seals with the primary key of its [Keyring] and opens with
// the key the envelope names (no trial decryption; a key not in the ring
// is [ErrUnknownKey], naming it). Two layers protect the plaintext:
//
//   - Key management: a [KEK] (AWS KMS in package awskms, Google Cloud KMS
//     in gcpkms, a local key file in localkey) generates and unwraps the
//     data key under an encryption context of at least purpose and agent,
//     so the service's audit log shows what a key was used for and a key
//     policy can require it. Without the cache, run ID and attempt are in
//     the context too.
//   - Data key: AES-256-GCM in Tink's format (the standard library's
//     crypto/cipher with random nonces, which opens what Tink's
//     aead/subtle sealed and the other way round) encrypts the plaintext
//     with associated data binding the format, the key ID, the context,
//     the run ID, the attempt, the invocation version, the purpose and the
//     agent ([Binding]). Tink's own KMS envelope AEAD is not used: it calls
//     the KMS with empty associated data, so no context would be sent.
//
// # Format (version 1)
//
// An envelope is a JSON object; byte fields are standard base64:
//
//	{"v":   1,                       format version
//	 "kid": "key-2026",              key ID in the keyring (1-128 of A-Z a-z 0-9 . _ : -)
//	 "ctx": {"agent": "probe",       the key-management context, not secret:
//	         "purpose": "invocation-config"},   purpose, agent [, run_id, attempt]
//	 "dk":  "AQIDAHh...",            the data key wrapped by the KEK
//	 "ct":  "k3Jx..."}               12-byte IV || ciphertext || 16-byte GCM tag (Tink, no prefix)
//
// The associated data is the concatenation of, each preceded by its length
// as a 4-byte big-endian integer: "sortie.envelope/v1", kid,
// [EncodeContext](ctx), run ID, attempt (decimal), invocation version,
// purpose, agent. Open refuses unknown fields, trailing data, another
// format version and oversize fields ([ErrMalformed]), a context naming
// another purpose, agent, run or attempt ([ErrBinding]), and any other
// change ([ErrAuth]); it never panics (see FuzzOpen).
//
// # Large envelopes
//
// [Keeper.SealLarge] seals payloads of up to [MaxLargePlaintextBytes]
// (run variables and results kept in object storage, [Config.SealPayload])
// with the same layers and associated data, framed in binary: a label, a
// 4-byte length, the JSON envelope without "ct", then the ciphertext.
//
// # Data-key cache
//
// With [Options.Cache], a data key generated for a (key, purpose, agent)
// seals every run of that agent until it reaches [CacheOptions.MaxAge] or
// [CacheOptions.MaxUses], and an unwrapped data key opens every envelope
// that carries it; the run and attempt then stay bound by the associated
// data only. Plaintext data keys live in memory only, are bounded by
// [CacheOptions.MaxEntries] and are zeroed when dropped (copies handed to
// the standard library's AES key schedule are not under our control). [Keeper.Stats] counts the KMS calls.
//
// # Inline configuration of runs
//
// [Config] connects this to the engine and the worker. The engine seals a
// submission's configuration at rest, bound to the run with attempt 0 and
// [PurposeAtRest], and stores only that envelope on the run; every launch
// opens it and re-seals it for the attempt with [PurposeInvocation]; the
// worker opens the attempt's envelope. The control plane never holds
// plaintext, an attempt's envelope opens for that attempt only, and a key
// policy can keep workers from opening the copy at rest.
//
// KMS requests per run (one attempt, engine and worker in separate
// processes, see TestKMSRequestsPerRun): without the cache 4 (engine:
// GenerateDataKey at rest, Decrypt and GenerateDataKey at launch; worker:
// Decrypt); with the cache the engine makes 2 per agent per cache period
// and a warm worker 1, so 10 runs of an agent take 3 requests in all.
package envelope
