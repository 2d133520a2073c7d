// Package sqlite implements [sortie.ControlPlane] on one SQLite file: the
// embedded, durable default control plane. It uses the pure-Go driver
// modernc.org/sqlite (no cgo).
//
// Every state change runs inside a BEGIN IMMEDIATE transaction: the driver
// loads the run row, applies the transition of package
// [github.com/sortie-run/sortie/controlplane] and writes the run back
// before it commits, so the rules hold across goroutines, across several
// [ControlPlane] values on one file and across processes. SQLite serialises
// the writers; busy_timeout makes a writer wait for another process's
// transaction instead of failing.
//
// Group commit: one writer goroutine owns the write connection (with its
// prepared statements). Changes that arrive while it is busy share the next
// transaction, each inside its own savepoint, so a change that fails rolls
// back alone; no call returns before the shared COMMIT is durable. With
// many runs in flight this divides the fsyncs among them.
//
// Durability: the database runs in WAL journal mode with synchronous=FULL by
// default, so every committed state change (a reservation, a launch, a
// claim, an event, a result) is fsynced before the call returns and
// survives a power loss, not only a crash of the process. NORMAL skips that
// fsync (WAL commits are synced at checkpoints) and is faster, but a power
// loss may roll back the last changes after a caller was told they were
// stored, which would break the exactly-once claim; it is available through
// [Options.Synchronous] for hosts that accept that.
//
// Layout: a run is stored as JSON with the indexed columns List and
// Expired need (id, state, context_id, agent, created_ms, lease_expires_ms,
// version); events are stored one row per AppendEvents call (a JSON array
// of its events, at most sortie.MaxEventsPerAppend) keyed (run_id,
// attempt, first_seq) with last_seq, so a batch costs one insert; and
// idempotency records are keyed (scope, key) with their run ID, request hash
// and expires_ms. Push configurations ([sortie.PushStore]) are keyed
// (run_id, id) with their delivery progress in columns; a partial index of
// those not done serves the pages of PendingPushConfigs in
// (next_attempt_ms, run_id, id) order, and UpdatePushDelivery keeps
// delivered_version at the maximum in its one UPDATE. A schema_version
// table lets Open create and migrate the schema idempotently, also when
// several processes open a new file at once; a file of an earlier release
// is migrated in place (schema version 2 adds push_configs, version 3 its
// format and sealed_token columns, version 4 moves events to batches).
//
// [ControlPlane] also implements [sortie.Notifier] for subscribers in the
// same process; it wakes them on changes made through that *ControlPlane.
// Followers in other processes poll, as [sortie.Client] does anyway.
package sqlite
