// Package dynamostream wakes followers of runs on the DynamoDB control
// plane (package controlplane/dynamo) when another process changes them,
// from the table's stream of keys (DynamoDB Streams, view KEYS_ONLY; the
// table [dynamo.TableDefinition] and terraform/aws make has it).
//
// A host runs one [Watcher] over its control plane handle: it reads every
// shard of the stream once per poll interval (1 s by default) and calls
// the handle's Changed for each run whose items a record names (the run
// item or one of its event batches), which wakes the handle's subscribers
// (the server's followers, clients waiting for a run); the handle already
// wakes them for the writes it makes itself.
//
// Cost: DynamoDB Streams bills GetRecords calls (stream read request
// units, about $0.02 per 100,000), not the table's capacity: a Watcher
// makes one per shard per interval, about 2.6 million a month per shard
// and host (about $0.52), whatever the number of followers; each
// follower then reads a run only when it changed (a strongly consistent
// Get and Events, about 2 read units), where polling cost those two reads
// per followed run every 200 ms. DynamoDB Streams throttles more than 5
// GetRecords calls a second on a shard, and advises at most two readers
// of one: with more than about four hosts, raise the poll interval. A
// record reaches the watcher after the stream's own delay (usually well
// under a second) and the poll interval. A table without a stream has no
// stream ARN ([StreamARN] fails): hosts then poll as before.
//
// [dynamo.TableDefinition]: https://pkg.go.dev/github.com/sortie-run/sortie/controlplane/dynamo#TableDefinition
package dynamostream
