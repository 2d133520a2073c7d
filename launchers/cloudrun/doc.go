// Package cloudrun launches Sortie attempts on Google Cloud Run.
//
// [JobsLauncher] runs one execution of a pre-deployed Job per attempt
// (never a Job per run) with RunJob overrides: the container's
// environment carries the [sortie.Invocation] as JSON in SORTIE_INVOCATION
// (at most [MaxEnvValueBytes], Cloud Run's 32 KiB limit on one
// environment variable value: the launcher is a [sortie.InvocationLimiter],
// so the engine refuses a larger invocation at submit with a
// [*sortie.ValidationError] naming its largest variable and the limit, and
// Start refuses one too — passing them by reference through object
// storage is not implemented), the task count is 1 and the task timeout
// runs to the attempt's deadline. The Job should set maxRetries 0: Sortie
// owns retries, and a provider retry is only a duplicate delivery the
// worker's claim refuses. Start takes the execution name from the RunJob
// operation's metadata and never waits for the operation.
//
// Cancel is CancelExecution: real cancellation (SIGTERM to the container,
// SIGKILL after Cloud Run's grace period), on top of the cooperative cancel
// every worker sees on its heartbeat. Describe reads GetExecution: the
// Completed condition and the task counts (running, succeeded, failed,
// cancelled, retried) give the phase the reconciler trusts.
//
// Idempotent Start: the Admin API cannot label an execution per run
// (RunJobRequest.Overrides has container args and env, task count and
// timeout only), so a launcher remembers the executions it started by
// launch ID and a retried Start returns the first one's Ref. Across
// processes, a second execution of the same launch ID is a duplicate
// delivery: its worker's claim is refused and it exits 0 without running.
//
// [ServiceLauncher] POSTs the invocation to a Cloud Run service running the
// same container in service mode, with an *http.Client that adds a
// Google-signed ID token (idtoken.NewClient(ctx, serviceURL) from
// google.golang.org/api/idtoken). The service answers 202 once the attempt
// is claimed and 409 when the claim is refused (a duplicate delivery, which
// Start treats as success). It is a [sortie.Launcher] only: there is no
// provider-side stop or status of a request, so cancellation is
// cooperative (the heartbeat) and the lease covers a lost instance. The
// service must use instance-based billing (CPU always allocated) and keep
// at least one minimum instance, since the attempt runs after the
// response, unseen by the autoscaler, and scale-in stops an instance
// (SIGTERM, SIGKILL 10 s later) whatever it runs; the Jobs launcher has
// none of these limits and is the default of terraform/gcp. The service
// accepts only the callers in its SORTIE_SERVICE_CALLERS allowlist.
//
// The container is cmd/sortie-cloudrun; see package
// github.com/sortie-run/sortie/functions/cloudrun for its environment.
//
// Errors: gRPC Unavailable, ResourceExhausted, DeadlineExceeded, Aborted
// and Internal wrap [sortie.ErrUnavailable]; NotFound wraps
// [sortie.ErrNotFound]; InvalidArgument and FailedPrecondition are a
// [*sortie.ValidationError].
package cloudrun
