package triggers

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/sortie-run/sortie"
)

// Record is one event of a delivery, or the reason it could not be read.
type Record struct {
	Event *Event
	// ItemID is the SQS messageId of the record, for batchItemFailures.
	ItemID string
	// Err is a [*sortie.ValidationError] when the record is malformed.
	Err error
}

// DetectKind tells the shape of a raw Lambda event: an EventBridge event
// (id, source, detail-type), or a Records batch of S3, SQS or SNS records
// (by the first record's event source). It returns a
// [*sortie.ValidationError] for anything else.
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
	switch {
	case probe.Spec != nil:
		return KindCloudEvents, nil
	case probe.DetailType != nil && probe.Source != nil && probe.ID != nil:
		return KindEventBridge, nil
	case len(probe.Records) > 0:
		return recordKind(probe.Records[0])
	}
	return "", sortie.Invalidf("event", "neither an EventBridge event (id, source, detail-type), a CloudEvent (specversion) nor a non-empty Records batch")
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
// for an EventBridge event, one per record of an S3, SQS or SNS batch. A
// malformed record is returned with Err set, so the others go on; an
// undecodable delivery is an error.
func ParseAWS(raw json.RawMessage) (Kind, []Record, error) {
	kind, err := DetectKind(raw)
	if err != nil {
		return "", nil, err
	}
	if kind == KindEventBridge {
		ev, err := parseEventBridge(raw)
		return kind, []Record{{Event: ev, Err: err}}, nil
	}
	if kind == KindCloudEvents {
		return "", nil, sortie.Invalidf("event", "a CloudEvent: deliver it over HTTP (see package cehttp)")
	}
	var batch struct {
		Records []json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal(raw, &batch); err != nil {
		return "", nil, sortie.Invalidf("event.Records", "%v", err)
	}
	recs := make([]Record, len(batch.Records))
	for i, rec := range batch.Records {
		recs[i] = parseRecord(kind, i, rec)
	}
	return kind, recs, nil
}

func parseRecord(kind Kind, i int, rec json.RawMessage) Record {
	var (
		ev  *Event
		id  string
		err error
	)
	switch kind {
	case KindS3:
		ev, err = parseS3(rec)
	case KindSQS:
		ev, id, err = parseSQS(rec)
	case KindSNS:
		ev, err = parseSNS(rec)
	}
	if err != nil {
		err = sortie.Invalidf(fmt.Sprintf("event.Records[%d]", i), "%s record: %v", kind, err)
		ev = nil
	}
	return Record{Event: ev, ItemID: id, Err: err}
}

func parseEventBridge(raw json.RawMessage) (*Event, error) {
	var e events.EventBridgeEvent
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, sortie.Invalidf("event", "EventBridge event: %v", err)
	}
	if e.ID == "" {
		return nil, sortie.Invalidf("event.id", "EventBridge event without an id: cannot deduplicate")
	}
	doc, err := decodeDoc(raw)
	if err != nil {
		return nil, sortie.Invalidf("event", "%v", err)
	}
	return &Event{Kind: KindEventBridge, ID: e.ID, Source: e.Source, Type: e.DetailType, Doc: doc}, nil
}

func parseS3(rec json.RawMessage) (*Event, error) {
	var r events.S3EventRecord
	if err := json.Unmarshal(rec, &r); err != nil {
		return nil, err
	}
	b, o := r.S3.Bucket.Name, r.S3.Object
	if b == "" || o.Key == "" || o.Sequencer == "" {
		return nil, fmt.Errorf("s3.bucket.name, s3.object.key and s3.object.sequencer are required to deduplicate, got %q, %q, %q", b, o.Key, o.Sequencer)
	}
	doc, err := decodeDoc(rec)
	if err != nil {
		return nil, err
	}
	// Bucket names hold no "/" and sequencers are hex, so the first two
	// "/" split the identity unambiguously.
	id := b + "/" + o.Sequencer + "/" + o.Key
	return &Event{Kind: KindS3, ID: id, Source: r.EventSource, Type: r.EventName, Subject: o.Key, Doc: doc}, nil
}

func parseSQS(rec json.RawMessage) (*Event, string, error) {
	var m events.SQSMessage
	if err := json.Unmarshal(rec, &m); err != nil {
		var id struct {
			MessageID string `json:"messageId"`
		}
		_ = json.Unmarshal(rec, &id)
		return nil, id.MessageID, err
	}
	if m.MessageId == "" {
		return nil, "", fmt.Errorf("no messageId")
	}
	doc, err := decodeDoc(rec)
	if err != nil {
		return nil, m.MessageId, err
	}
	doc.(map[string]any)["body"] = decodeIfJSON(m.Body)
	return &Event{Kind: KindSQS, ID: m.MessageId, Source: m.EventSourceARN, Type: m.EventSource, Doc: doc}, m.MessageId, nil
}

func parseSNS(rec json.RawMessage) (*Event, error) {
	var r events.SNSEventRecord
	if err := json.Unmarshal(rec, &r); err != nil {
		return nil, err
	}
	if r.SNS.MessageID == "" {
		return nil, fmt.Errorf("no Sns.MessageId: cannot deduplicate")
	}
	doc, err := decodeDoc(rec)
	if err != nil {
		return nil, err
	}
	if sns, ok := doc.(map[string]any)["Sns"].(map[string]any); ok {
		sns["Message"] = decodeIfJSON(r.SNS.Message)
	}
	return &Event{Kind: KindSNS, ID: r.SNS.MessageID, Source: r.SNS.TopicArn, Type: r.SNS.Type, Subject: r.SNS.Subject, Doc: doc}, nil
}
