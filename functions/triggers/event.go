package triggers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// Kind names the shape an event arrived in.
type Kind string

// The kinds of event a [Router] routes.
const (
	KindEventBridge Kind = "eventbridge" // an EventBridge event
	KindS3          Kind = "s3"          // one record of an S3 notification
	KindSQS         Kind = "sqs"         // one record of an SQS batch
	KindSNS         Kind = "sns"         // one SNS notification
	KindCloudEvents Kind = "cloudevents" // a CloudEvent (Eventarc: Pub/Sub, Cloud Storage)
)

var kinds = map[Kind]bool{KindEventBridge: true, KindS3: true, KindSQS: true, KindSNS: true, KindCloudEvents: true}

// Event is one event to route, normalised from its delivery shape.
//
// | kind        | ID (identity)                        | Source                     | Type               |
// |-------------|--------------------------------------|----------------------------|--------------------|
// | eventbridge | id                                   | source                     | detail-type        |
// | s3          | bucket, sequencer (or version), key  | eventSource (aws:s3)       | eventName          |
// | sqs         | messageId                            | eventSourceARN (the queue) | eventSource        |
// | sns         | Sns.MessageId                        | Sns.TopicArn               | Sns.Type           |
// | cloudevents | source and id                        | source                     | type               |
//
// An event unwrapped from an envelope (S3 records in an SNS message, an
// SQS body or an EventBridge event; an SNS message in an SQS body) has the
// envelope's message identity, "/", and its own as its ID.
type Event struct {
	Kind Kind
	// ID is the event's own identity, from which the idempotency key of
	// every run it starts derives; see [IdempotencyKey].
	ID     string
	Source string
	Type   string
	// Subject is the CloudEvents subject, or the S3 object key (decoded);
	// may be empty.
	Subject string
	// Doc is the event's JSON, decoded with numbers as json.Number: what
	// field patterns and templates read. SQS bodies and SNS messages that
	// are valid JSON are decoded in place; others stay strings.
	Doc any
	// Envelope is the event this one was unwrapped from; nil for an event
	// delivered as it is. Templates read its fields as "@envelope.PATH".
	Envelope *Event
	// TraceParent and TraceState are the W3C trace context the event
	// carries from its producer: an SQS message's traceparent and
	// tracestate message attributes (else its AWSTraceHeader, converted
	// by [XRayTraceParent]), an SNS notification's message attributes of
	// those names, a CloudEvent's traceparent and tracestate extensions.
	// The event's runs continue that trace. Empty when it carries none; an
	// event unwrapped from an envelope without its own continues the
	// envelope's.
	TraceParent, TraceState string
	// extra are pseudo-fields beyond @kind, @id, @source, @type, @subject.
	extra map[string]any
	// inner are the records unwrapped from this envelope: routed after it,
	// each on its own. An envelope with inner records matches only rules
	// that name its kind.
	inner []Record
}

// envelopeField is the pseudo-field prefix that reads the envelope.
const envelopeField = "@envelope"

// field returns the value of a pseudo-field ("@kind") or a path in Doc.
func (e *Event) field(p string) (any, error) {
	switch p {
	case "@kind":
		return string(e.Kind), nil
	case "@id":
		return e.ID, nil
	case "@source":
		return e.Source, nil
	case "@type":
		return e.Type, nil
	case "@subject":
		return e.Subject, nil
	}
	if v, ok := e.extra[p]; ok {
		if err, bad := v.(error); bad {
			return nil, err
		}
		return v, nil
	}
	if p == envelopeField || strings.HasPrefix(p, envelopeField+".") {
		if e.Envelope == nil {
			return nil, fmt.Errorf("%s: this %s event came in no envelope", p, e.Kind)
		}
		if p == envelopeField {
			return e.Envelope.Doc, nil
		}
		return e.Envelope.field(strings.TrimPrefix(p, envelopeField+"."))
	}
	if len(p) > 0 && p[0] == '@' {
		return nil, fmt.Errorf("%s: no such field for a %s event", p, e.Kind)
	}
	return lookup(e.Doc, p)
}

// setExtra sets pseudo-field name; an error value makes reading it fail
// with that error.
func (e *Event) setExtra(name string, v any) {
	if e.extra == nil {
		e.extra = map[string]any{}
	}
	e.extra[name] = v
}

// maxKeyBytes is the limit of an idempotency key.
const maxKeyBytes = sortie.MaxIdempotencyKeyBytes

// IdempotencyKey returns the key of the run rule starts for ev:
// "trigger/RULE/KIND:IDENTITY". When that exceeds 255 bytes (or the
// identity is not valid UTF-8) the identity is replaced by "sha256:" and
// the hex SHA-256 of the identity, which always fits (rule names are at
// most 63 bytes). The same event routed by the same rule always gets the
// same key; two rules get two keys.
func IdempotencyKey(rule string, ev *Event) string {
	k := "trigger/" + rule + "/" + string(ev.Kind) + ":" + ev.ID
	if len(k) <= maxKeyBytes && isUTF8(k) {
		return k
	}
	sum := sha256.Sum256([]byte(ev.ID))
	return "trigger/" + rule + "/" + string(ev.Kind) + ":sha256:" + hex.EncodeToString(sum[:])
}

// decodeDoc decodes JSON with numbers kept as json.Number.
func decodeDoc(b []byte) (any, error) {
	var v any
	if err := strictjson.UnmarshalUseNumber(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// decodeIfJSON returns s decoded when it is a JSON value, else s.
func decodeIfJSON(s string) any {
	if !json.Valid([]byte(s)) {
		return s
	}
	v, err := decodeDoc([]byte(s))
	if err != nil {
		return s
	}
	return v
}
