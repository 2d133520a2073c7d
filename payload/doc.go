// Package payload keeps the payloads of runs that are over their inline
// limits in object storage: a [sortie.PayloadStore] on a
// gocloud.dev/blob bucket (fileblob in the state directory by default,
// s3blob on AWS, gcsblob on GCP, any other driver through [OpenURL] with
// a bucket URL).
//
// Every object is sealed before it leaves the process, in a large
// envelope of package crypto/envelope bound to the run, its agent and the
// object's key (envelope.PurposePayload), under the same keyring as the
// run's sealed configuration: the bucket alone reveals nothing. The run
// keeps a [sortie.PayloadRef] (store, key, size, SHA-256 of the stored
// object); [Store.Get] checks the size and hash before it opens the
// object, and refuses any other object, or a missing one, with
// [sortie.ErrPayloadIntegrity] naming the key and the SHA-256.
//
// Keys are "runs/RUN_ID/NAME", so [Store.DeleteRun] removes everything a
// run stored, and [Store.Sweep] removes the objects of runs the control
// plane does not know (a submit that failed after its variables were
// stored). Limits: a per-payload maximum and a per-run total
// ([sortie.PayloadLimits]).
//
// Workers that hold no storage client (the Lambda bootstrap, the Cloud
// Run container) reach the store through presigned URLs: a [Granter]
// (payload/sealed's, over the Store's [Store.SignURL]) is the engine's
// Sealer on such a host, and grants each attempt GET URLs for the run's
// variables and recorded steps kept by reference, and PUT URLs for its
// result, checkpoint and step slots, sealed into the invocation with
// the keyring the workers hold (which also seals the objects); the worker
// uses package payload/sealed's URLStore, which applies the same rule
// (size, SHA-256, envelope) as [Store]. The Lambda reconciler and
// trigger functions grant the same URLs with package payload/s3presign's
// signer instead of a bucket, and the reconciler deletes expired runs'
// objects through its DELETE URLs (payload/sealed's Deleter).
package payload
