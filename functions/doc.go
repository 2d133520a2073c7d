// Package functions is the worker runtime: it executes one attempt of a run
// from its [sortie.Invocation] and reports what happened.
//
// [Worker.Execute] claims the attempt through a [Reporter] (a duplicate
// delivery, a superseded launch or a cancelled run fails the claim and
// nothing is executed), heartbeats every HeartbeatMs while the attempt runs
// (a heartbeat that sees the run's cancel request, or a lost claim, cancels
// the handler's context), runs the handler under the attempt's deadline,
// and finishes the attempt with its [sortie.Outcome].
//
// Runtimes are opaque references resolved on the worker host, never paths:
//
//   - "go:NAME" runs the [Handler] registered as NAME in a [Registry];
//   - "exec:ID" runs the host-pinned command [ExecSpec] with that ID, loaded
//     by [LoadExecRuntimes], which speaks the NDJSON worker protocol: the
//     invocation on its stdin, [sortie.Message] lines on its stdout, logs on
//     its stderr, and nothing of the host's environment but [ExecSpec.Env].
//
// Warm workers: [Worker.Warm] runs go handlers (key "go") or an exec
// runtime (key "exec:ID") on a [Pool] of processes that stay up and take
// one attempt after another over the [SessionVersion] protocol (invoke and
// cancel frames on stdin, each attempt's messages on stdout), while the
// worker itself claims, heartbeats and reports: `sortie worker --session`
// ([Worker.ServeSession]) is the Go side, examples/wordfreq-py a Python
// one. A pool process that dies during an attempt ends it without a word
// ([ComputeEndedError]); one that misbehaves or does not stop in time is
// killed and replaced.
//
// Reporters: [NewControlPlaneReporter] writes to a [sortie.ControlPlane],
// [NewCallbackReporter] posts signed callbacks to the host that launched
// the attempt (package server/callback), [NewReporter] picks one of them by
// the invocation's report mode, [NewStreamReporter] writes NDJSON messages
// to a stream (the stdout of `sortie worker`, see [Worker.ServeStdio]), and
// [Tee] combines them. The
// NDJSON codec is [MessageReader], [WriteMessage] and [ReadInvocation].
//
// Inline configuration (secrets a submission carries, sealed by the engine)
// is off by default. [InlineConfig] turns it on with an [Opener] and an
// explicit environment allowlist, the complete set of variables a handler
// ([Call.Config]) or an exec command (its environment) can see from it; the
// worker opens it after the claim and rejects a configuration that sets
// any other variable.
//
// Configuration references keep credentials out of the request: an
// invocation names opaque IDs, and the host's allowlist ([ConfigRefs],
// read by [LoadConfigRefs]) maps each to one variable and its source: the
// worker's environment, a host-pinned file, or a [SecretSource] (AWS
// Secrets Manager in functions/awssecrets, Secret Manager in
// functions/gcpsecrets). [Worker.ConfigRefs] resolves them after the claim
// of every attempt, and handlers see them with the inline configuration;
// a failure names the reference by ID only.
//
// Durable steps: [Call.Step] (and the typed [Step]) runs a function once
// per run. Its result is recorded in the control plane ([Reporter.Step])
// before Step returns, and later attempts (retries, resumes) get it from
// their invocation ([sortie.Invocation.Steps], or read through the
// reporter for a [sortie.StepsRef]) without running it; a secret step is
// sealed by the worker's [StepSealer]; a result over
// sortie.MaxStepResultBytes is kept in the worker's payload store
// ([Worker.Payloads]) and recorded by reference; a worker that reaches
// the store through its invocation's URLs (Lambda, Cloud Run) keeps it in
// one of the step slots its host granted the attempt
// (sortie.StepSlotPayloadName, at most sortie.MaxStepSlots), and fails
// the attempt with a retryable error once they are used up (the retry
// replays the recorded steps and gets fresh slots). Exec commands and
// session workers report steps with the step message
// ([sortie.StepMessage]), which the runtime records before it reads their
// next line (a session worker waits for the answering [SessionStep]
// frame); only a Go session worker reports one by reference (result_ref,
// stored by itself).
//
// Host policies: [Call.Model] resolves the run's model profiles through
// the worker's [sortie.ModelPolicy] ([Worker.Models]; a run outside it is
// rejected before its handler starts); [Call.AuthorizeTool] and
// [Call.Connect] ask the host's [Worker.AuthorizeTool] and
// [Worker.AuthorizeConnection] hooks (none by default: everything is
// refused), on the launching host for a session worker (the authorize
// message, [sortie.AuthorizeRequest], and the [SessionAuthorize] frame),
// and report each decision as an event without arguments; [Call.Webhook]
// runs a webhook step through the [Worker.Webhooks] executor (none by
// default), its destination policy and its signer. Refusals match
// sortie.ErrRefused, and a handler returning one fails the run with
// error type "refused", not retryable.
//
// Masking: every configuration value the attempt opened (inline and
// referenced), in its plain, base64, base64url and hex forms, is replaced
// by "[REDACTED:NAME]" in the attempt's events, step results, outcome and
// log before anything leaves the worker.
//
// Handlers see the attempt through a [Call]: its variables, numbered events
// ([Call.Emit], sent in batches: an event waits at most
// [Worker.EventWindow], 5 ms by default, and every event is sent before
// the attempt's next heartbeat and its finish, so a worker that crashes
// loses at most its last window's events; [Call.Flush] sends them at once), resume data, inline configuration, logger, and the HTTP
// client every outbound call must use ([Call.HTTPClient], bound by the
// destination policy [Worker.Destinations]; closed unless the host allows
// destinations). Each attempt is traced: a
// span "sortie.attempt" under the invocation's traceparent and tracestate
// (never a span of an earlier invocation of a warm worker), with
// "sortie.claim" and "sortie.finish"; an exec command gets TRACEPARENT and
// TRACESTATE, and callback requests carry both. They end an attempt with a value
// (the result), an error (retryable unless wrapped by [Permanent] or
// [Rejected]) or [Interrupt] (input-required or auth-required).
package functions
