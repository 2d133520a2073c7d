// Package a2a is the [remote.Transport] and [remote.TaskTransport] of A2A
// agents (the Agent2Agent protocol), through the a2a-go client
// (github.com/a2aproject/a2a-go/v2 a2aclient).
//
// [Transport] resolves each agent URL's card (at
// /.well-known/agent-card.json, or from [remote.CallRequest.AgentCard])
// once, and talks to the interface the card offers (JSON-RPC or
// HTTP+JSON). A call's message becomes an A2A user message: its text as a
// text part, its data as a data part, its ID as the message ID (which a
// Sortie host uses as the idempotency key), the call's metadata as
// message metadata, and the skill in metadata key [SkillKey]. A task's
// result is its "result" artifact (or its last one): the first data part,
// or the text parts joined as a JSON string. Every [remote.TaskEvent]
// carries its raw payload (the A2A StreamResponse as JSON), and every
// [remote.TaskStatus] the A2A status.
//
// Against a Sortie host (server/a2a), SubscribeTask resumes after
// [remote.SubscribeRequest.After] through the [ResumeAfterParam] service
// parameter, and events carry their cursor (metadata key [MetaCursor]); other
// agents ignore the parameter and give the standard subscription.
package a2a
