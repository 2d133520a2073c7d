// Package runs is the [remote.Transport] and [remote.TaskTransport] of a
// Sortie host: a run is a task, the skill is the agent, and the context ID
// groups runs.
//
// [Transport] works over any sortie.ExecutionEngine, so the same code calls
// an engine in this process (a *sortie.Engine) or a remote host through its
// HTTP API (server/httpengine): a [Dialer] returns the engine of an agent
// URL, and [Single] serves one engine under one URL. For hosts at their
// URLs:
//
//	tr := runs.New(func(_ context.Context, u string) (sortie.ExecutionEngine, error) {
//		return httpengine.New(u, &httpengine.Options{Token: token})
//	}, nil)
//
// A call's message becomes the run's variables: [remote.Message.Data] is a
// JSON object whose keys are the variables, and [remote.Message.Text], when
// set, is the variable "text". The message ID is the run's idempotency key,
// so a retried call starts no second run. A call with
// [remote.CallRequest.TaskID] resumes that input-required or auth-required
// run with the message as its resume input: a new attempt with the
// interrupt's checkpoint.
//
// A call's [remote.CallRequest.Metadata] becomes the run's labels, shown
// wherever the run is (sortie get, the API, [remote.TaskSnapshot.Meta]
// under [MetaLabels]): a string value as it is, any other value as its
// JSON, within a run's label limits (sortie.MaxLabels keys of 1-63 bytes,
// values of at most 255 bytes; beyond them the call is refused naming
// "metadata"). A follow-up message may repeat the run's metadata but not
// change it. Labels are stored as they are: metadata must not carry a
// secret. Metadata key sortie.MetaConfigRefs ("sortie/config_refs") is
// not a label: it names the run's configuration references, IDs of the
// host's allowlist whose values the worker resolves.
//
// Every [remote.TaskStatus] carries its raw payload (the run's state,
// reason, error and interrupt as JSON), and every progress
// [remote.TaskEvent] the run event as the host stores it.
//
// Stream and SubscribeTask report each run event as a working status with
// the event's text, its kind and data in Meta, and its cursor
// ("ATTEMPT.SEQ"); [remote.SubscribeRequest.After] resumes after a cursor
// without losing or repeating an event.
//
// Push configurations need an engine that implements [PushConfigs] (the
// HTTP engine does), or a *sortie.Engine whose control plane is a
// sortie.PushStore (every control plane in this module); a Sortie host signs every delivery with its own webhook key, so
// [remote.PushConfig] Token and Auth are refused rather than stored.
package runs
