package sortie

// Size limits, in bytes, checked before anything is stored or executed.
const (
	// MaxJSONDepth is how deeply any JSON value Sortie stores (variables,
	// results, event data, checkpoints, inputs) may nest arrays and
	// objects: deeper values break common clients' parsers.
	MaxJSONDepth = 256
	// MaxVariablesBytes is the largest JSON object of run variables.
	MaxVariablesBytes = 256 << 10
	// MaxInvocationBytes is the largest encoded [Invocation]; it stays under
	// the Lambda asynchronous invocation payload limit of 1 MB.
	MaxInvocationBytes = 900 << 10
	// MaxMessageBytes is the largest encoded worker [Message] (one NDJSON line).
	MaxMessageBytes = 1 << 20
	// MaxEventDataBytes is the largest data payload of one event.
	MaxEventDataBytes = 64 << 10
	// MaxEventTextBytes is the largest text of one event.
	MaxEventTextBytes = 16 << 10
	// MaxResultBytes is the largest run result (output or checkpoint).
	MaxResultBytes = 256 << 10
	// MaxCancelReasonBytes is the longest reason a cancel request
	// ([Engine.Cancel], POST /v1/runs/{id}/cancel, sortie cancel
	// --reason) may give.
	MaxCancelReasonBytes = 1024
	// MaxIdempotencyKeyBytes is the longest idempotency key.
	MaxIdempotencyKeyBytes = 255
	// MaxLabels is the most labels a run may carry; keys are 1 to
	// MaxLabelKeyBytes bytes, values at most MaxLabelValueBytes, both
	// UTF-8 without control characters.
	MaxLabels = 32
	// MaxLabelKeyBytes is the longest label key.
	MaxLabelKeyBytes = 63
	// MaxLabelValueBytes is the longest label value.
	MaxLabelValueBytes = 255
	// MaxEventsPerAppend is the most events one AppendEvents call takes.
	MaxEventsPerAppend = 100
	// MaxSealedPayloadURLsBytes is the largest
	// [Invocation.SealedPayloadURLs]: an attempt's presigned URLs with a
	// session token, compressed and sealed. A host trims the step slots
	// it grants ([MaxStepSlots]) to stay within it.
	MaxSealedPayloadURLsBytes = 12 << 10
)
