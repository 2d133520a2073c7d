package triggers

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// unwrap reads a message body (an SQS body, an SNS Message) that may carry
// other events, the usual fan-outs: an S3 notification (S3 → SNS, S3 →
// SQS), an SNS notification (SNS → SQS without raw message delivery; only
// when allowSNS), or an s3:TestEvent. It returns the body's value (decoded
// when it is JSON), the records it carries, each with env as its envelope,
// and whether it is a test notification, which starts nothing.
func unwrap(env *Event, body, field string, allowSNS bool) (any, []Record, bool) {
	v := decodeIfJSON(body)
	obj, ok := v.(map[string]any)
	if !ok {
		return v, nil, false
	}
	raw := []byte(body)
	switch {
	case isS3Test(raw):
		return v, nil, true
	case isS3Notification(obj):
		return v, s3Records(env, raw, field), false
	case allowSNS && isSNSEnvelope(obj):
		var e events.SNSEntity
		if err := json.Unmarshal(raw, &e); err != nil {
			return v, []Record{refused(KindSNS, "", field, err)}, false
		}
		// The document has the shape of an SNS record delivered to Lambda,
		// so rules of kind sns read either delivery with the same paths.
		rec := snsRecord(field, obj, e, map[string]any{"EventSource": "aws:sns", "Sns": obj}, env)
		if rec.Ignored != "" {
			return v, nil, true
		}
		return v, []Record{rec}, false
	}
	return v, nil, false
}

// s3Records reads the records of an S3 notification carried in env.
func s3Records(env *Event, raw []byte, field string) []Record {
	var n struct {
		Records []json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return []Record{refused(KindS3, "", field, err)}
	}
	out := make([]Record, len(n.Records))
	for i, rec := range n.Records {
		out[i] = s3Record(fmt.Sprintf("%s.Records[%d]", field, i), rec, env)
	}
	return out
}

// isS3Notification reports a decoded S3 notification: Records whose first
// record's eventSource is aws:s3.
func isS3Notification(obj map[string]any) bool {
	recs, _ := obj["Records"].([]any)
	if len(recs) == 0 {
		return false
	}
	first, _ := recs[0].(map[string]any)
	return first["eventSource"] == "aws:s3"
}

// isSNSEnvelope reports a decoded SNS notification as SNS writes it into
// an SQS message body without raw message delivery (Amazon SNS Developer
// Guide, "Amazon SNS message and JSON formats"): Type Notification,
// MessageId, TopicArn, Message (a string, the published message).
func isSNSEnvelope(obj map[string]any) bool {
	id, _ := obj["MessageId"].(string)
	_, topic := obj["TopicArn"].(string)
	_, msg := obj["Message"].(string)
	return obj["Type"] == "Notification" && id != "" && topic && msg
}

// isS3Test reports the test notification S3 sends to an SNS or SQS
// destination when a bucket notification is configured
// (PutBucketNotificationConfiguration: {"Service":"Amazon S3",
// "Event":"s3:TestEvent", ...}; the fields of aws-lambda-go's
// events.S3TestEvent that tell it).
func isS3Test(raw []byte) bool {
	var t struct{ Service, Event string }
	return json.Unmarshal(raw, &t) == nil && t.Event == "s3:TestEvent" && t.Service == "Amazon S3"
}
