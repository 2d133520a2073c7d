// Package cloudrun is the Google Cloud Run glue of the worker runtime: the
// environment of the cmd/sortie-cloudrun container ([LoadEnv]) and its job
// mode ([Env.RunJob]).
//
// In job mode the container executes the one [sortie.Invocation] the
// launcher (github.com/sortie-run/sortie/launchers/cloudrun) put in
// [EnvInvocation] through RunJob's container overrides, with
// [functions.Worker.Execute] and a control-plane reporter
// ([functions.NewControlPlaneReporter]) named after the execution
// ([EnvExecution]). A duplicate delivery's claim is refused and nothing
// runs; the task still succeeds. SIGTERM (CancelExecution, the task
// timeout) ends the attempt with error type "terminated", and a run whose
// cancel was requested ends cancelled.
//
// The control plane is the SQLite file of [EnvSQLitePath]; no invocation
// names a path.
package cloudrun
