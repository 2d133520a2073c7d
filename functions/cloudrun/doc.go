// Package cloudrun is the Google Cloud Run glue of the worker runtime: the
// environment of the cmd/sortie-cloudrun container ([LoadEnv]), its job
// mode ([Env.RunJob]) and its service mode ([Handler]).
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
// In service mode, [Handler] takes an invocation per POST to
// [InvocationsPath] from a caller its [Verifier] accepts (in production
// [IDTokenVerifier]: a Google-signed ID token with the service URL as
// audience), answers 202 once the attempt is claimed (409 when the claim
// is refused: a duplicate delivery) and runs the attempt in the background
// of the instance. That needs instance-based billing (CPU always
// allocated): with request-based billing the CPU is throttled after the
// response and the attempt stalls until its lease expires and the
// reconciler retries it. [Handler.Close] (on SIGTERM) ends the attempts
// still running and stores their outcomes.
//
// Where an attempt reports is its invocation's choice among what the
// container has: the host's signed callbacks (report mode "callback",
// which needs nothing in the container: no control plane, no AWS access),
// or the container's own control plane, the SQLite file of
// [EnvSQLitePath] (no invocation names a path) or the DynamoDB table of
// [EnvDynamoTable], reached with AWS credentials from workload identity
// federation ([EnvAWSRoleARN]) or the SDK's usual sources.
//
// Inline configuration is opened as in the Lambda function: the keyring of
// [EnvKMSKeys] (Cloud KMS keys, by key ID, so a key kept after a rotation
// still opens what it sealed) opens the attempt's envelope inside the
// container, and the allowlist of [EnvConfigEnv] is the complete set of
// variables it may set. Package host/gcphost opens the keyring.
package cloudrun
