// Package a2a serves a Sortie host's runs to any A2A client (the Agent2Agent
// protocol, through github.com/a2aproject/a2a-go/v2): a [Handler] serves the
// agent card at [CardPath], the JSON-RPC binding at [JSONRPCPath] and the
// HTTP+JSON binding under [RESTPath]. A body holding an object key
// twice, nested deeper than the host's API allows or starting with a
// UTF-8 byte-order mark is refused before a2a-go decodes it, so a request
// means one thing: on JSON-RPC an invalid-request error (-32600, id null)
// naming the key, on REST HTTP 400 in the binding's google.rpc.Status
// shape with the field in a details entry. A body sent with a
// Content-Encoding other than identity is HTTP 415 naming the header on
// both, with Accept-Encoding: identity.
//
// Tasks are runs, read from and written to the engine's control plane, so
// a task survives a host restart and its worker runs wherever the
// engine's launcher puts it (in process, Lambda, Cloud Run). The task ID
// is the run ID; the context ID is the run's context ID (a run submitted
// without one shows its run ID).
//
// # Agents and messages
//
// The card lists the host's agents as skills. A new task runs the skill
// named in message metadata [SkillKey] ("skill"), or [Options.DefaultAgent]
// (by default the only agent, when there is one). The message ID is the
// run's idempotency key: sending the same message again returns the same
// task. The message's parts become the run's variables: the keys of its
// data part (at most one, a JSON object) and its text parts, joined by
// newlines, as "text"; file parts are refused. A message without a
// context ID gets one derived from its message ID. Metadata key
// [MetaConfigRefs] names the run's configuration references (a list of
// IDs of the host's allowlist; one it does not allow is invalid params).
// The message's other metadata (every key but [SkillKey]) becomes the
// run's labels — a string
// value as it is, any other as its JSON, at most 32 keys of 1-63 bytes and
// values of 255 bytes, else invalid params naming message.metadata — and
// the task shows them under [MetaLabels]; a follow-up message may repeat
// them but not change them. Labels are stored as sent: metadata must not
// carry a secret.
//
// SendMessage waits (up to [Options.MaxBlock]) until the task finishes or
// pauses, unless configuration.returnImmediately is set.
// SendStreamingMessage and SubscribeToTask stream the task, then each run
// event as a working status update (its text and data as the message
// parts, its kind and cursor in the metadata keys [MetaEventKind] and
// [MetaCursor]), then the result artifact ("result": a data part, or a
// text part for a JSON string) and the final status.
//
// # Resuming a subscription
//
// The A2A specification has no way to resume a stream without losing
// events; this binding adds one, declared in the card as the extension
// [ResumeExtensionURI]: send the last cursor seen in the service parameter
// (HTTP header) [ResumeAfterParam], and SubscribeToTask delivers every
// event after it, none twice, also when the task has finished meanwhile.
// Without it SubscribeToTask behaves as the specification says: the
// current task, then updates from now on, and an error for a finished
// task.
//
// # Interrupts
//
// A worker's interrupt puts the task in input-required or auth-required,
// with the prompt as the status message. A follow-up message on the same
// task ID (with the answer in its parts) resumes the run as a new attempt
// with the interrupt's checkpoint. A follow-up repeated after the task
// resumed returns the task without resuming it twice. The follow-up is
// stored with the run as its resume input, so it must not carry a
// credential: authorise out of band, then send the follow-up.
//
// # Push notifications
//
// Push configurations are kept by the control plane ([sortie.PushStore])
// in the A2A format ([sortie.PushFormatA2A]) and delivered by the host's
// push dispatcher (server/push), which must be given [PushFormats] and,
// for tokens, [TokenOpener]. Each delivery is a POST of the task as
// GetTask returns it, wrapped as A2A's StreamResponse ({"task": {...}},
// see [PushMessage]), once per change of the task's state (changes close
// together may be delivered as one), signed per Standard Webhooks with
// the host's webhook key (headers webhook-id, webhook-timestamp,
// webhook-signature).
//
// A configuration's token is a secret the host keeps only sealed: with
// [Options.TokenSealer] (for example [EnvelopeSealer] over the host's
// envelope keeper) it is sealed, bound to the task and the configuration
// ID, and stored as the configuration's SealedToken; the dispatcher opens
// it for each delivery and sends it in the A2A-Notification-Token header
// (a2a-go's name) and X-A2A-Notification-Token (the Python SDK's). The
// token is write-only: GetTaskPushConfig, ListTaskPushConfigs and the
// answer to CreateTaskPushConfig omit it, as A2A allows. Without a sealer
// a configuration with a token is refused (invalid params naming token).
// Authentication credentials are always refused (invalid params naming
// authentication): the host sends no credential of a client's to a
// client's URL; receivers check the token or the signature instead.
//
// Bad input is an invalid-params error whose message names the field
// ("invalid message.parts[0]: ...") and whose details hold it as "field".
package a2a
