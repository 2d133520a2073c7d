// Package lambda implements [sortie.Launcher] on AWS Lambda
// (aws-sdk-go-v2 service/lambda): [Launcher.Start] sends the invocation
// with an asynchronous Invoke (InvocationType Event) to the worker function
// built from cmd/sortie-lambda (see package
// github.com/sortie-run/sortie/functions/lambda), and the attempt's
// [sortie.Ref] carries the function, region and Lambda request ID.
//
// Payload limit: an asynchronous Invoke takes at most 1 MB of payload
// (1,048,576 bytes; AWS Lambda quotas, "Invocation payload (request and
// response) ... 1 MB for asynchronous"). Start checks the invocation's JSON
// against [Options.MaxPayloadBytes] before sending and refuses a larger one
// with a [*sortie.ValidationError] naming the limit; nothing is offloaded,
// because the engine passes references (sealed configuration, variables at
// most [sortie.MaxVariablesBytes]) and the run's data stays in the control
// plane.
//
// Idempotency: a retried Start sends the same launch ID again; the worker's
// claim refuses the second delivery, so one attempt executes once. Lambda's
// own async retries should be off (MaximumRetryAttempts 0): Sortie owns
// retries, and a provider retry is just another delivery the claim refuses.
//
// Cancellation is cooperative: Lambda cannot stop a running invocation, so
// the launcher is not a [sortie.Canceler] (it claims no capability it does
// not have). The engine's cancel request sets the run's cancelRequested
// flag, the worker sees it on its next heartbeat and stops; the run's
// cancel timeout ends the run without it, and the function timeout is the
// backstop. The launcher is not a [sortie.Describer] either: Lambda keeps
// no per-request status to read; the worker's heartbeats and the
// reconciler's leases are the source of truth, and the on-failure
// destination feeds the worker's reconciler mode.
//
// Errors: throttling (TooManyRequestsException and other throttling
// codes), 5xx faults and network failures wrap sortie.ErrUnavailable;
// ResourceNotFoundException wraps sortie.ErrNotFound; invalid parameters
// and RequestTooLargeException wrap sortie.ErrInvalidArgument. The SDK's
// error stays in the chain for errors.As.
package lambda
