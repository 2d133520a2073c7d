package triggers

import (
	"encoding/json"
	"fmt"
	"net/url"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// decodeS3Key decodes an object key as S3 writes it in notifications:
// URL-encoded, query-style ("red flower.jpg" arrives as "red+flower.jpg",
// "+" as "%2B"; Amazon S3 User Guide, "Event message structure"). It is
// decoded exactly once, as aws-lambda-go fills S3Object.URLDecodedKey
// (url.QueryUnescape) and Powertools does for S3 and EventBridge events
// (unquote_plus). Keys are UTF-8, so a key that decodes to other bytes is
// refused rather than handed on with replacement characters.
func decodeS3Key(raw string) (string, error) {
	key, err := url.QueryUnescape(raw)
	if err != nil {
		return "", fmt.Errorf("s3.object.key %q is not URL-encoded as S3 writes keys: %v", raw, err)
	}
	if !utf8.ValidString(key) {
		return "", fmt.Errorf("s3.object.key %q decodes to bytes that are not UTF-8", raw)
	}
	return key, nil
}

// s3Identity is an S3 event's own identity: BUCKET/SEQUENCER/KEY, or
// BUCKET/EVENTNAME@VERSIONID/KEY for an event without a sequencer, with
// the decoded key. Bucket names hold no "/" and sequencers are hex, so
// the first two "/" split it unambiguously. Inside an envelope, whose
// message ID already makes it unique, both may be missing.
func s3Identity(bucket, sequencer, version, eventName, key string, enveloped bool) (string, error) {
	if bucket == "" || key == "" {
		return "", fmt.Errorf("s3.bucket.name and s3.object.key are required, got %q, %q", bucket, key)
	}
	var mid string
	switch {
	case sequencer != "":
		mid = sequencer
	case version != "":
		mid = eventName + "@" + version
	case !enveloped:
		return "", fmt.Errorf("neither s3.object.sequencer nor s3.object.versionId: cannot deduplicate")
	}
	return bucket + "/" + mid + "/" + key, nil
}

// s3Record builds the record of one S3 notification record; env is the
// envelope it came in (SNS message, SQS body), or nil. Its document gains
// s3.object.urlDecodedKey, the decoded key, next to s3.object.key as S3
// sent it.
func s3Record(field string, rec json.RawMessage, env *Event) Record {
	doc, err := decodeDoc(rec)
	if err != nil {
		return refused(KindS3, "", field, err)
	}
	obj, ok := lookupObject(doc, "s3.object")
	if !ok {
		return refused(KindS3, "", field, fmt.Errorf("no s3.object"))
	}
	raw, _ := obj["key"].(string)
	key, err := decodeS3Key(raw)
	if err != nil {
		return refused(KindS3, "", field, err)
	}
	var r events.S3EventRecord
	if err := json.Unmarshal(rec, &r); err != nil {
		return refused(KindS3, "", field, err)
	}
	o := r.S3.Object
	id, err := s3Identity(r.S3.Bucket.Name, o.Sequencer, o.VersionID, r.EventName, key, env != nil)
	if err != nil {
		return refused(KindS3, "", field, err)
	}
	if env != nil {
		id = env.ID + "/" + id
	}
	obj["urlDecodedKey"] = key
	return Record{Event: &Event{Kind: KindS3, ID: id, Source: r.EventSource, Type: r.EventName, Subject: key, Doc: doc, Envelope: env}}
}

// eventBridgeS3 unwraps the S3 object event an EventBridge event from S3
// carries (Amazon S3 User Guide, "EventBridge event message structure":
// detail.bucket.name, detail.object.key, sequencer, version-id). Its
// document is the EventBridge event's plus "s3" in the notification
// record's shape (s3.bucket.name, s3.object.key and urlDecodedKey, and
// the detail's object fields), so rules of kind s3 read either delivery
// with the same paths. It returns false for an event without an object.
func eventBridgeS3(env *Event) (Record, bool) {
	obj, ok := lookupObject(env.Doc, "detail.object")
	bucket, _ := lookupObject(env.Doc, "detail.bucket")
	raw, isStr := obj["key"].(string)
	if !ok || !isStr || bucket == nil {
		return Record{}, false
	}
	key, err := decodeS3Key(raw)
	if err != nil {
		return refused(KindS3, "", "event.detail.object.key", err), true
	}
	name, _ := bucket["name"].(string)
	seq, _ := obj["sequencer"].(string)
	version, _ := obj["version-id"].(string)
	id, err := s3Identity(name, seq, version, env.Type, key, true)
	if err != nil {
		return refused(KindS3, "", "event.detail", err), true
	}
	s3obj := map[string]any{"urlDecodedKey": key}
	for k, v := range obj {
		s3obj[k] = v
	}
	for from, to := range map[string]string{"etag": "eTag", "version-id": "versionId"} {
		if v, ok := obj[from]; ok {
			s3obj[to] = v
		}
	}
	doc := map[string]any{}
	for k, v := range env.Doc.(map[string]any) {
		doc[k] = v
	}
	doc["s3"] = map[string]any{"bucket": map[string]any{"name": name}, "object": s3obj}
	return Record{Event: &Event{Kind: KindS3, ID: env.ID + "/" + id, Source: env.Source, Type: env.Type,
		Subject: key, Doc: doc, Envelope: env}}, true
}

// lookupObject returns the object at path p of doc, if there is one.
func lookupObject(doc any, p string) (map[string]any, bool) {
	v, err := lookup(doc, p)
	if err != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}
