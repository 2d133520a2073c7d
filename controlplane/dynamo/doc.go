// Package dynamo implements [sortie.ControlPlane] on one DynamoDB table
// (aws-sdk-go-v2), so any number of hosts, workers and reconcilers in any
// number of processes share runs. [New] takes a client ([API]) and a table
// created by [CreateTable] or `sortie dynamo create-table` from
// [TableDefinition]; the terraform module is checked against the same
// constants.
//
// # Single-table layout
//
//	item                pk                      sk                       attributes
//	run                 RUN#<id>                RUN                      b (body), v, st, at, lp, ck, cx, ls, lk
//	event batch         RUN#<id>                EVT#<attempt:4>#<seq:10> b (the batch's events)
//	idempotency record  IDEM#<len>#<scope>#<key> IDEM                    rid, h, exp (ms), ttl (s), b
//	push counter        RUN#<id>                PUSH                     n (the run's push configs)
//	push config         RUN#<id>                PUSH#<config id>         u, kid, fmt, stk, cm, dv, fl, le, pd, pp
//
// The body b is the run as JSON, compressed with DEFLATE, next to the
// capacity recorded for the run and the last event seq of each ended
// attempt. Top-level attributes hold what conditions and indexes need:
// version v, state st and attempt at (every write is conditional on all
// three), and the index keys. Every timestamp is an integer in Unix ms
// (lk, exp, the *_ms fields of the body, the digits of ck); the one
// exception is ttl, the record's expiry rounded up to Unix seconds because
// DynamoDB's TTL requires seconds; no code compares it.
//
// Four keys-only global secondary indexes: [IndexList] (every run, newest
// first), [IndexContext] (the runs of one context), the sparse
// [IndexLease] (runs the reconciler must look at) and the sparse
// [IndexPush] (push configurations not done, by NextAttemptMs). List reads an index and
// then the runs with a strongly consistent BatchGetItem, filtering by state
// and agent; page tokens are the last run's position signed with
// HMAC-SHA256 ([Options.PageTokenKey]), never a LastEvaluatedKey a client
// could forge. The list and lease partitions are constants, so one index
// partition takes every reservation (about 1000 writes/s); indexes are
// eventually consistent, so a run reserved a moment ago may be missing from
// List and Expired for a moment.
//
// # Writes
//
// Reserve is one TransactWriteItems of the run and its idempotency record,
// each conditional on its key being free (an expired record counts as
// absent: exp <= now, both in ms). A duplicate is answered from the
// cancellation reasons with ALL_OLD and no extra read; its request hash is
// always compared first. A run without an idempotency key is one
// conditional PutItem.
//
// Every other state change reads the run strongly consistent, applies the
// shared transition of package [github.com/sortie-run/sortie/controlplane]
// and writes it back with an UpdateItem conditional on version, state and
// attempt; a lost condition returns the winner (ALL_OLD) and the
// transition is applied again to it, with no extra read. Claim, Heartbeat
// and Finish therefore only ever write for the claimed attempt: a stale
// worker's call fails the transition's check.
//
// # Events
//
// One AppendEvents call is one batch item keyed by its first seq (several
// items in one transaction when its events exceed 300 KB), stored with a
// PutItem conditional on the key being free; a concurrent append that took
// the key makes the call number its events again after the new last batch.
// A batch is not a transaction with the run item, so the append reads the
// run again after the put: when the attempt ended meanwhile, it deletes
// the batch and fails. Finish records the attempt's last seq on the run,
// and Events hides any later batch (a stale worker that died before
// deleting its batch). The trade-off: an append costs one write unit (a
// batch of up to 1 KB) and three reads, where a transaction with the run
// item would cost four write units (two items, doubled) and one read.
//
// # Item size
//
// An item is at most 400 KB ([ItemLimitBytes]). Nothing is offloaded to
// object storage and nothing is truncated: a change that would make the
// run item larger (variables, result, checkpoint and resume input share
// it, compressed) is refused with a [*sortie.ValidationError] naming the
// limit, and the stored run is unchanged; one AppendEvents call takes at
// most 3.5 MB of event JSON.
//
// # Cost per run
//
// Every request asks for ReturnConsumedCapacity INDEXES. Each run write
// records on the run the units of the reads and writes this handle made
// for it since its previous write, plus its own units computed from the
// item sizes as DynamoDB bills them (a write of up to 1 KB is one unit, a
// transactional one two, each index entry written one more); the
// difference to what DynamoDB then reports is recorded with the run's
// next write. When an attempt ends, the units recorded since the previous
// attempt ended are put on its [sortie.Usage] (ReadUnits, WriteUnits).
// Reads that change nothing (Get, List, Events, Expired) are not put on
// runs; [ControlPlane.Consumed] counts everything a handle consumed.
//
// A run with an idempotency key, SetRef and ten events in one
// AppendEvents costs 14 write units (Reserve 8: two items and two index
// entries, all doubled by the transaction; RecordLaunch, SetRef, Claim and
// the append 1 each; Finish 2, one for leaving the lease index); without a
// key Reserve costs 3 and the run 9. The lease index key only moves
// earlier: a later lease (RecordLaunch, Claim, Heartbeat) keeps it, so
// those writes touch no index; Expired moves a key it reaches too early.
//
// # Push configurations
//
// [ControlPlane] implements [sortie.PushStore]. A run's push items sort
// between its event batches and its run item, so PutPushConfig and
// ListPushConfigs read the counter, the configurations and the run (which
// proves the run exists; runs are never deleted) with one strongly
// consistent Query; its read units include the run item's size. Push
// calls never write the run item, so they change neither the run's
// version nor its recorded units; what they consume is counted in
// [ControlPlane.Consumed] only.
//
// A configuration's format and sealed token (an opaque envelope the host
// made) are attributes of its item, absent when empty. Write units of a
// configuration under 1 KB (the URL may take it to 3, a sealed token to 7):
// a new one 6 (one transaction of the configuration, the run's push
// counter, conditional on it being under [sortie.MaxPushConfigs], and the
// index entry, all doubled); a replacement 1; DeletePushConfig 4, two more
// while it is in the index. UpdatePushDelivery is one UpdateItem
// conditional on the stored DeliveredVersion not being higher: 1 when
// NextAttemptMs and Done are kept (a delivered version), 3 when
// NextAttemptMs moves (the index key moves), 2 when Done takes it out of
// the index; a stale version costs a lost condition (1) and a second
// update of the rest. PendingPushConfigs queries the index and reads the
// configurations with a strongly consistent BatchGetItem (1 read unit
// each), filtering entries the eventually consistent index still shows;
// its pages follow the index (NextAttemptMs first), and a page token is
// the index position of the page's last configuration, signed like List's.
//
// A table created before the push index existed needs it added (the
// terraform module adds it in place; `sortie dynamo create-table` does not
// change an existing table); until then PendingPushConfigs fails.
//
// The package implements no [sortie.Notifier]: followers poll Events.
package dynamo
