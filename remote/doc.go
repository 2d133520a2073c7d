// Package remote is the client contract for calling remote agents: a
// message goes to a skill of an agent at a URL, and comes back as a result,
// a stream of events or a long-running remote task.
//
// [Transport] (the remote-task API's RemoteTransport) is the minimal
// surface: a unary [Transport.Send], a [Transport.Stream] whose last event
// has Done set and the result, and [Transport.Cancel] by agent URL and task
// ID. [TaskTransport] (SupportsRemoteTasks) is the optional task-oriented
// surface: create or continue a task ([TaskTransport.SendTask], blocking or
// not), fetch it with a history length, list tasks by context ID and state
// in pages ([TaskPage] with a total size), subscribe to its events (resuming
// after a cursor), and manage its push-notification configurations.
//
// Tasks move through the [TaskState]s; [TaskState.Terminal] holds for
// completed, failed, cancelled and rejected. A paused task makes Send and
// Stream return [*InputRequiredError] or [*AuthRequiredError] carrying the
// [TaskSnapshot]; a task that failed, was cancelled or rejected gives a
// [*TaskError]. Continue a paused task by sending a message with its
// [CallRequest.TaskID].
//
// [Node] forwards a message to one remote skill through a transport, mirrors
// the caller's cancellation onto the remote task (through
// [Transport.Cancel], once [CallRequest.Bind] reported the task ID), and
// reports remote_call_start, remote_call_success, remote_call_error,
// remote_call_retry and remote_stream_event [Observation]s to an
// [Observer]. Its [Policy] retries transport failures with backoff (never
// an answer: see [TransportFailure]), bounds each attempt, and validates a
// completed task's result against a JSON Schema ([ErrInvalidResult]).
//
// With a [BindingStore] ([MemoryBindings]; remote/sqlitebindings in a
// file; remote/bindingtest is the contract), a Node records the task each
// call with a [CallOptions.Key] started, as soon as the transport reports
// it and until the task ends. A caller that restarted lists its records
// ([BindingStore.ListBindings]) and either waits for each task's outcome
// ([Node.Resume], or simply the same Call with the same key) or cancels it
// ([Node.CancelBound]). A call whose record cannot be stored is abandoned
// and its task cancelled, so no task runs that its caller could not find
// again.
//
// Transports live in sub-packages: remote/runs calls runs of a Sortie
// host (a run is a task, the skill is the agent, the context ID groups
// runs) through any sortie.ExecutionEngine, and remote/a2a calls any A2A
// agent through the a2a-go client.
package remote
