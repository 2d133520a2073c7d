// Package sealed is the payload rule without a bucket client: how a
// payload object is sealed and named ([Seal]), how it is checked and
// opened ([Open]: size, then SHA-256, then the envelope), which objects
// an attempt is granted presigned URLs for ([Grant], sealed into its
// invocation by a [Granter] over any [URLSigner]), a
// [sortie.PayloadStore] over the presigned URLs a host grants one attempt
// ([URLStore]), and which objects of a run can be named without listing
// the bucket ([RunKeys]), deleted through DELETE URLs by a [Deleter] (the
// Lambda reconciler's retention).
//
// Package payload's Store applies the same rule on a gocloud.dev/blob
// bucket. Workers that must stay lean and hold no storage credentials
// (the Lambda bootstrap, the Cloud Run container) use a URLStore: the
// host signs, per attempt, GET URLs for the run's variables and its
// recorded steps kept by reference, and PUT URLs for the attempt's
// result, checkpoint and step slots (trimmed to fit
// [sortie.MaxSealedPayloadURLsBytes]), expiring shortly after the attempt's
// deadline, and seals them into the invocation
// ([sortie.Invocation.SealedPayloadURLs]) with the keyring that seals its
// configuration. The worker opens them with its keyring and reaches the
// bucket with net/http alone. The URLs are bearer credentials: they are
// never in an error, a log line or anything stored, only in the sealed
// invocation and in the worker's memory.
package sealed
