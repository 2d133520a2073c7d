// Command sortie submits, follows, inspects, cancels, resumes and deletes runs, and is
// also the CLI worker (`sortie worker`) that executes one invocation read on
// stdin and writes its messages as NDJSON on stdout.
//
// On the embedded defaults it keeps state in an SQLite control plane under
// --state-dir (or SORTIE_STATE_DIR; default .sortie in the working
// directory) and launches each attempt as a `sortie worker` subprocess.
//
// The commands are flag parsing over package host: the flags and their
// SORTIE_* variables make a host.Config, `serve` is host.New and
// Host.Serve, the other commands use the host's client (or, with --host,
// the HTTP transport of a served host), and `worker` is host.NewWorker.
// `agents` and `describe AGENT` show the agents runs may name and what
// their variables do (their input_schema): read from the built-ins and
// agent.json without opening any state, or with --host from the host's
// GET /v1/agents.
//
// Exit status: 0 completed, 1 failed or rejected (or any other error),
// 2 usage or input error, 3 cancelled, 4 interrupted (input-required or
// auth-required), 130 when following is interrupted by the user or the
// reader of stdout goes away (the run goes on).
package main
