// Package dynamo implements [sortie.ControlPlane] on one DynamoDB table
// (aws-sdk-go-v2), so any number of hosts, workers and reconcilers in any
// number of processes share runs. [New] takes a client ([API]) and a table
// created by [CreateTable] or `sortie dynamo create-table` from
// [TableDefinition]; the terraform module is checked against the same
// constants.
//
// # Single-table layout
//
//	item                pk                       sk                       attributes
//	run                 RUN#<id>                 RUN                      b (body), v, st, at, lp, ck, cx, sp, ls, lk, wt, sn, sb
//	step                RUN#<id>                 STEP#<step name>         b (the step)
//	event batch         RUN#<id>                 EVT#<attempt:4>#<seq:10> b (the batch's events)
//	idempotency record  IDEM#<len>#<scope>#<key> IDEM                     rid, h, exp (ms), ttl (s), b, wt
//	push counter        RUN#<id>                 PUSH                     n (the run's push configs)
//	push config         RUN#<id>                 PUSH#<config id>         u, kid, fmt, stk, cm, dv, fl, le, pd, pp
//	agent registry      CTL#agents               A#<agent>                (none)
//	lease watermarks    CTL#lease                CTL                      w<partition> (Unix ms)
//	queued run          CTL#Q#<concurrency key>  Q#<run id>               rid
//	concurrency counts  CTL#LIMITS#<shard>       <concurrency key>        sa (runs holding slots), sq (queued)
//	agent spend         CTL#SPEND#<agent>        W#<period ms>#<start ms> ns (nano-dollars), ttl (s)
//
// The body b is the run as JSON, compressed with DEFLATE, next to the
// capacity recorded for the run and the last event seq of each ended
// attempt. Top-level attributes hold what conditions and indexes need:
// version v, state st and attempt at (every write is conditional on all
// three), and the index keys. Every timestamp is an integer in Unix ms
// (lk, exp, the *_ms fields of the body, the digits of ck); the one
// exception is ttl, the record's expiry rounded up to Unix seconds because
// DynamoDB's TTL requires seconds; no code compares it. [KeyPrefixes]
// lists the partition key prefixes, for IAM's dynamodb:LeadingKeys.
//
// Concurrency limits and agents' budgets are control items: a queued run
// is reserved with its queue item and its key's count in one
// TransactWriteItems; its admission updates the run, takes a slot
// (conditional on fewer than the limit) and deletes the queue item in
// another; the write that ends a run gives its slot back and adds its
// cost to its agent's spend in the run's own transaction.
//
// A durable step is its own item, written with a count of the run's steps
// and their bytes on the run item (sn, sb) in one TransactWriteItems
// conditional on the version at which the claim was seen live: 2 × ⌈run
// item KB⌉ + 2 × ⌈step item KB⌉ write units, 4 for small ones. The steps
// are read with the run item by one Query (sort keys RUN..STEP$).
//
// # Indexes
//
// Six keys-only global secondary indexes. [IndexList] holds every run
// under its agent, [IndexContext] the runs of a context, [IndexState] the
// runs in a [RareState] (failed, cancelled, rejected, input-required,
// auth-required), all newest first (sort key ck). [IndexLease] holds every
// run's lease key, [IndexPush] the push configurations not done,
// [IndexEnded] the terminal runs by update time (retention). The list,
// state and lease partitions are write-sharded: a run's shard is a hash of
// its ID, one of [IndexShards] (4), so each agent, state and the lease
// index take about 4,000 writes a second instead of one partition's 1,000.
//
// [ControlPlane.List] reads the partitions that hold exactly what a query
// asks for (a rare state, an agent, a context, the live runs) and merges
// them newest first; an unfiltered list merges every registered agent's
// shards (the registry holds one small item per agent, written once per
// handle and agent). The runs are then read with a strongly consistent
// BatchGetItem. Page tokens are positions signed with HMAC-SHA256
// ([Options.PageTokenKey]), never a LastEvaluatedKey a client could
// forge. Indexes are eventually consistent: a run reserved a moment ago
// may be missing from List and Expired for a moment.
//
// A run's lease entry stays when the run ends: removing it would cost a
// write per run. [ControlPlane.Expired] instead keeps a watermark per
// lease partition below which every entry is passed (the run ended, waits
// for input, or its key moved), reads entries above it once, and raises it.
//
// # Writes
//
// Reserve is two conditional PutItems, not a transaction (the issue that
// asked for fewer write units allowed it; DESIGN.md describes one
// TransactWriteItems): the idempotency record first, then the run. The
// record carries the run as reserved, so a duplicate that finds the record
// but not the run stores the run from it: the pair heals itself. With the
// reservation's launch ID, the run is stored with attempt 1 recorded.
//
// Every other state change applies the shared transition of package
// [github.com/sortie-run/sortie/controlplane] to the run and writes it
// back with an UpdateItem conditional on version, state and attempt; a
// lost condition returns the winner (ALL_OLD, or a strongly consistent
// GetItem when DynamoDB leaves it out) and the transition is applied again
// to it. The claim holder's own writes (Heartbeat, Finish) start from the
// run as the handle last wrote or read it, without a read; a stale copy
// costs one lost condition. Claim, Heartbeat and Finish therefore only
// ever write for the claimed attempt: a stale worker's call fails the
// transition's check.
//
// Every call that fails transiently (throttling, a transaction conflict,
// a 5xx answer, a network failure) is sent again with a jittered, growing
// pause, up to 8 tries beyond the SDK's own, and counted in
// [ControlPlane.Consumed] and in the metric [MetricRetries] by cause
// (the strongly consistent reads made for lost conditions without their
// item in [MetricFallbackReads]). A write applied by DynamoDB whose answer was
// lost is recognised when its retry's condition fails with its own item
// (the same version and body, or the Reserve call's random write token wt).
//
// # Events
//
// One AppendEvents call is one batch item keyed by its first seq (several
// items in one transaction when its events exceed 300 KB), stored with a
// PutItem conditional on the key being free; a concurrent append that took
// the key makes the call number its events again after the new last batch.
// The claim is checked on the handle's copy of the run (read when it has
// none or it does not show the claim live), and the attempt's last seq is
// the one the handle stored last (a Query otherwise): an append costs one
// write unit (a batch of up to 1 KB) and, through the worker's handle, no
// read. A batch is not a transaction with the run item: when another
// process ended the attempt between the check and the put, the batch is
// stored but never part of the run (the ending write records the attempt's
// last seq, Events hides later batches), and the worker learns at its next
// heartbeat.
//
// # Item size
//
// An item is at most 400 KB ([ItemLimitBytes]). Nothing is offloaded to
// object storage and nothing is truncated: a client's change that would
// make the run item larger (variables and resume input share it with the
// result and checkpoint, compressed) is refused with a
// [*controlplane.TooLargeError] naming the limit (it matches
// sortie.ErrInvalidArgument), and the stored run is unchanged; a worker's
// Finish whose outcome would not fit ends the attempt with a permanent
// output_too_large error instead. One AppendEvents call takes at most
// 3.5 MB of event JSON.
//
// # Cost per run
//
// Every request asks for ReturnConsumedCapacity INDEXES. Each run write
// records on the run the units of the reads and writes this handle made
// for it since its previous write, plus its own units computed from the
// item sizes as DynamoDB bills them (a write of up to 1 KB is one unit,
// each index entry written one more); the difference to what DynamoDB
// then reports is recorded with the run's next write. When an attempt
// ends, the units recorded since the previous attempt ended are put on its
// [sortie.Usage] (ReadUnits, WriteUnits). Reads that change nothing (Get,
// List, Events, Expired) are not put on runs; [ControlPlane.Consumed]
// counts everything a handle consumed.
//
// A run with an idempotency key and ten events in one AppendEvents, as
// the engine and a worker make it, costs 9 write units: Reserve 4 (the
// record, the run, its list and lease entries), SetRef, Claim and the
// append 1 each, Finish 2 (the run and its [IndexEnded] entry); and about
// 3.5 read units: SetRef, Claim and Finish
// (the attempt's last seq) 1 each, and the reconciler's pass over the
// run's lease entry 0.5. A run that ends in a rare state writes its state
// entry (1 more), a context 1 more, and a run longer than the launch grace
// (10 s) has its lease key moved by the reconciler (3). The lease key only
// moves earlier: a later lease (Claim, Heartbeat) keeps it, so those
// writes touch no index.
//
// # Push configurations
//
// [ControlPlane] implements [sortie.PushStore]. A run's push items sort
// between its event batches and its run item, so PutPushConfig and
// ListPushConfigs read the counter, the configurations and the run (which
// proves the run exists) with one strongly
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
// LeasePushDelivery is one UpdateItem of the configuration's lease owner
// and end (lo, lu), conditional on it being pending and the lease free
// for the owner (1 write unit; the push index keys do not move).
//
// # Shared by replicas
//
// [ReplayCache] keeps the worker callbacks' message IDs in the table (one
// conditional PutItem each, with TTL), so a replayed callback is refused
// by every host. The handle is a [sortie.Notifier] for the writes it makes;
// package dynamostream reads the table's stream to wake its subscribers of
// the writes other processes make.
//
// A table created before the push or state index existed needs them
// added (the terraform module adds them in place; `sortie dynamo
// create-table` does not change an existing table); until then
// PendingPushConfigs and lists of a rare state fail. [Reindex] (`sortie
// dynamo reindex`) moves runs stored before the sharded indexes into them.
package dynamo
