// Package lambda is the AWS Lambda glue of the worker runtime
// (aws-lambda-go): [Handler.Invoke] is the function's handler (and
// [TriggerHandler] the trigger mode's), and cmd/sortie-lambda reads the
// environment ([LoadEnv]), builds the function with package host/awshost
// (which opens the DynamoDB control plane, the KMS keyring and the Lambda
// launcher) and starts it on provided.al2023 (`go build -tags lambda.norpc -o
// bootstrap ./cmd/sortie-lambda`, arm64 or amd64).
//
// # Worker mode
//
// An event carrying a [sortie.Invocation] is decoded and validated, then
// executed by [functions.Worker.Execute]: the claim refuses a duplicate
// async delivery (nothing is executed and the handler succeeds with status
// "not-executed"), sealed configuration is opened through KMS, heartbeats
// carry the run's cancel request, and the attempt stops ahead of the Lambda
// deadline (the context's deadline less min(1 s, 10% of the time left),
// then the worker's own margin) with error type "deadline", retryable per
// the run's policy. The handler returns an error only when the outcome could
// not be delivered (or the invocation is invalid), so Lambda's on-failure
// destination receives exactly the attempts the reconciler must end.
//
// Each finished attempt's [sortie.Usage] carries MemoryMB
// (lambdacontext.MemoryLimitInMB), BilledDurationMs (the handler's wall
// time rounded up to the next ms, as Lambda bills), Arch (arm64 or x86_64,
// which Lambda prices apart) and one request, so package pricing prices
// the attempt as Lambda bills it.
//
// Reporting: invocations with report mode "control-plane" write to the
// control plane this function's environment names ([EnvTable]); never one
// the invocation names. Mode "callback" is refused until a host callback
// reporter exists.
//
// # Reconciler mode
//
// With [EnvMode] set to [ModeReconciler], the function takes Lambda
// on-failure destination records ([DestinationRecord]: the failed request's
// payload is the invocation) and finishes the attempt they name with a
// retryable error of type [ErrorTypeLambda] when it is still live with that
// launch ID; and scheduled events (EventBridge), on which it runs
// [sortie.Engine.ReconcileAll] (expired leases, due retries) until a pass
// finds nothing due or the invocation's deadline less 10 s: a backlog is
// drained 100 runs a pass in one invocation, and a retry whose backoff
// ends within the invocation is launched by it. A retry due later waits
// for the next scheduled event (the schedule is the reconciler interval on
// AWS: a backoff shorter than it becomes up to one interval). With
// [EnvRetention] each scheduled event also deletes the terminal runs last
// updated longer ago, and with [EnvPayloadBucket] the payload objects
// each names first (see [Handler.Retention]).
//
// The configuration comes from the environment only, never from an event;
// the names are the Env* constants.
//
// # Hosts outside Lambda
//
// The same configuration builds the host of a long-lived process (sortie
// serve in a container, with the CLI's --dynamodb-table, --lambda-function
// and --kms-keys): package host/awshost opens the same parts from the same
// values ([ParseKMSKeys] reads the keyring's).
package lambda
