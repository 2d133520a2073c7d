package triggers

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// Record is one item of a delivery: an event to route (with the records
// unwrapped from it), a test notification to acknowledge, or why the item
// was refused.
type Record struct {
	// Event is the event to route; nil when Err or Ignored is set.
	Event *Event
	// ItemID is the SQS messageId of the record, for batchItemFailures.
	ItemID string
	// FIFO is set for a record of an SQS FIFO queue (an eventSourceARN
	// ending in ".fifo"), whose Group is its MessageGroupId attribute:
	// records of one group must start their runs in order.
	FIFO  bool
	Group string
	// Kind and ID name the record when Event is nil (ID where it is known).
	Kind Kind
	ID   string
	// Err is a [*sortie.ValidationError] when the record cannot be read:
	// it is rejected, and a redelivery cannot help.
	Err error
	// Ignored says why the record was acknowledged without routing (an
	// s3:TestEvent); empty otherwise.
	Ignored string
}

// s3TestIgnored is why an s3:TestEvent starts nothing.
const s3TestIgnored = "s3:TestEvent: the test notification S3 sends when a bucket notification is configured; acknowledged, nothing to start"

// DetectKind tells the shape of a raw Lambda event: an EventBridge event
// (id, source, detail-type), a CloudEvent (specversion), an S3 test
// notification (s3:TestEvent), or a Records batch of S3, SQS or SNS
// records (by the first record's event source). It returns a
// [*sortie.ValidationError] for anything else, and for an event whose own
// object holds a key twice (named).
func DetectKind(raw json.RawMessage) (Kind, error) {
	var probe struct {
		ID         *string           `json:"id"`
		Source     *string           `json:"source"`
		DetailType *string           `json:"detail-type"`
		Spec       *string           `json:"specversion"`
		Records    []json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return "", sortie.Invalidf("event", "not a JSON object: %v", err)
	}
	// The event's own keys: {"Records":[],"Records":[...]} would be read
	// as its last batch. A key twice in a record refuses that record.
	if _, err := strictjson.ScanTop(raw, 1); err != nil {
		return "", sortie.Invalidf("event", "%v", err)
	}
	switch {
	case probe.Spec != nil:
		return KindCloudEvents, nil
	case probe.DetailType != nil && probe.Source != nil && probe.ID != nil:
		return KindEventBridge, nil
	case len(probe.Records) > 0:
		return recordKind(probe.Records[0])
	case isS3Test(raw):
		return KindS3, nil
	}
	return "", sortie.Invalidf("event", "neither an EventBridge event (id, source, detail-type), a CloudEvent (specversion), an s3:TestEvent nor a non-empty Records batch")
}

func recordKind(rec json.RawMessage) (Kind, error) {
	var src struct {
		Lower string `json:"eventSource"`
		Upper string `json:"EventSource"`
	}
	if err := json.Unmarshal(rec, &src); err != nil {
		return "", sortie.Invalidf("event.Records[0]", "not a JSON object: %v", err)
	}
	switch {
	case src.Lower == "aws:s3":
		return KindS3, nil
	case src.Lower == "aws:sqs":
		return KindSQS, nil
	case src.Upper == "aws:sns":
		return KindSNS, nil
	}
	return "", sortie.Invalidf("event.Records[0].eventSource", "%q: want aws:s3, aws:sqs or aws:sns", src.Lower+src.Upper)
}

// ParseAWS reads a raw Lambda event of an AWS kind into its records: one
// for an EventBridge event or an s3:TestEvent, one per record of an S3,
// SQS or SNS batch. Envelopes are unwrapped: S3 records carried by an SNS
// message, an SQS body or an EventBridge event from S3 (source aws.s3),
// and an SNS message carried by an SQS body, are the outer record's
// inner records. A record that cannot be read is returned with Err set, so
// the others go on; an undecodable delivery is an error.
func ParseAWS(raw json.RawMessage) (Kind, []Record, error) {
	kind, err := DetectKind(raw)
	if err != nil {
		return "", nil, err
	}
	switch {
	case kind == KindEventBridge:
		return kind, []Record{parseEventBridge(raw)}, nil
	case kind == KindCloudEvents:
		return "", nil, sortie.Invalidf("event", "a CloudEvent: deliver it over HTTP (see package cehttp)")
	case isS3Test(raw):
		return kind, []Record{{Kind: KindS3, Ignored: s3TestIgnored}}, nil
	}
	var batch struct {
		Records []json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal(raw, &batch); err != nil {
		return "", nil, sortie.Invalidf("event.Records", "%v", err)
	}
	recs := make([]Record, len(batch.Records))
	for i, rec := range batch.Records {
		field := fmt.Sprintf("event.Records[%d]", i)
		switch kind {
		case KindS3:
			recs[i] = s3Record(field, rec, nil)
		case KindSQS:
			recs[i] = parseSQS(field, rec)
		case KindSNS:
			recs[i] = parseSNS(field, rec)
		}
	}
	return kind, recs, nil
}

// refused is the record of an item that cannot be read.
func refused(kind Kind, id, field string, err error) Record {
	return Record{Kind: kind, ID: id, Err: sortie.Invalidf(field, "%s record: %v", kind, err)}
}

func parseEventBridge(raw json.RawMessage) Record {
	var e events.EventBridgeEvent
	if err := json.Unmarshal(raw, &e); err != nil {
		return refused(KindEventBridge, "", "event", err)
	}
	if e.ID == "" {
		return refused(KindEventBridge, "", "event.id", fmt.Errorf("no id: cannot deduplicate"))
	}
	doc, err := decodeDoc(raw)
	if err != nil {
		return refused(KindEventBridge, e.ID, "event", err)
	}
	ev := &Event{Kind: KindEventBridge, ID: e.ID, Source: e.Source, Type: e.DetailType, Doc: doc}
	if e.Source == "aws.s3" {
		if inner, ok := eventBridgeS3(ev); ok {
			ev.inner = []Record{inner}
		}
	}
	return Record{Event: ev}
}

func parseSQS(field string, rec json.RawMessage) Record {
	var m events.SQSMessage
	if err := json.Unmarshal(rec, &m); err != nil {
		var id struct {
			MessageID string `json:"messageId"`
		}
		_ = json.Unmarshal(rec, &id)
		return refused(KindSQS, id.MessageID, field, err)
	}
	if m.MessageId == "" {
		return refused(KindSQS, "", field+".messageId", fmt.Errorf("no messageId: cannot deduplicate"))
	}
	doc, err := decodeDoc(rec)
	if err != nil {
		return refused(KindSQS, m.MessageId, field, err)
	}
	ev := &Event{Kind: KindSQS, ID: m.MessageId, Source: m.EventSourceARN, Type: m.EventSource, Doc: doc}
	ev.TraceParent, ev.TraceState = sqsTrace(&m)
	body, inner, test := unwrap(ev, m.Body, field+".body", true)
	if test {
		return Record{Kind: KindSQS, ID: m.MessageId, ItemID: m.MessageId, Ignored: s3TestIgnored}
	}
	doc.(map[string]any)["body"] = body
	ev.inner = inner
	fifo := strings.HasSuffix(m.EventSourceARN, ".fifo")
	return Record{Event: ev, ItemID: m.MessageId, FIFO: fifo, Group: m.Attributes["MessageGroupId"]}
}

func parseSNS(field string, rec json.RawMessage) Record {
	var r events.SNSEventRecord
	if err := json.Unmarshal(rec, &r); err != nil {
		return refused(KindSNS, "", field, err)
	}
	doc, err := decodeDoc(rec)
	if err != nil {
		return refused(KindSNS, r.SNS.MessageID, field, err)
	}
	sns, _ := doc.(map[string]any)["Sns"].(map[string]any)
	return snsRecord(field+".Sns", sns, r.SNS, doc, nil)
}

// snsRecord builds the record of an SNS notification whose Sns object
// (decoded into sns, also holding Message) is e, inside doc. env is the
// SQS message carrying it, or nil.
func snsRecord(field string, sns map[string]any, e events.SNSEntity, doc any, env *Event) Record {
	if e.MessageID == "" || sns == nil {
		return refused(KindSNS, "", field+".MessageId", fmt.Errorf("no MessageId: cannot deduplicate"))
	}
	// An SNS message keeps its MessageId inside an SQS body: it is the same
	// message however it arrives, so both paths get one run per rule.
	ev := &Event{Kind: KindSNS, ID: e.MessageID, Source: e.TopicArn, Type: e.Type, Subject: e.Subject, Doc: doc, Envelope: env}
	ev.TraceParent, ev.TraceState = snsTrace(e.MessageAttributes)
	msg, inner, test := unwrap(ev, e.Message, field+".Message", false)
	if test {
		return Record{Kind: KindSNS, ID: e.MessageID, Ignored: s3TestIgnored}
	}
	sns["Message"] = msg
	ev.inner = inner
	return Record{Event: ev}
}
