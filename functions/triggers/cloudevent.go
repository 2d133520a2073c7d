package triggers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/sortie-run/sortie"
)

// CloudEvent is the part of a CloudEvent routing reads, filled from the
// SDK's event by package cehttp (or by hand).
type CloudEvent struct {
	ID, Source, Type, Subject string
	SpecVersion               string
	// Time is the time attribute as written (RFC 3339). Optional.
	Time string
	// DataContentType is the datacontenttype attribute. Optional.
	DataContentType string
	// Data is the event data as bytes, exactly as delivered (decoded from
	// data_base64 in the JSON format). Optional.
	Data []byte
	// Extensions are the extension attributes. Optional.
	Extensions map[string]any
}

// pubsubPublished is the Eventarc type of a Pub/Sub message.
const pubsubPublished = "google.cloud.pubsub.topic.v1.messagePublished"

// NewCloudEventEvent builds the [Event] of a CloudEvent. Its identity is
// len(source) ":" source id, which no two (source, id) pairs share. Its
// document holds the attributes ("id", "source", "type", "subject",
// "time", "specversion", "datacontenttype", extensions by name) and the
// data, never lossily:
//
//   - JSON data (datacontenttype application/json, text/json or +json;
//     or absent, when the data is valid JSON) is "data", decoded;
//   - text (text/*, a charset=utf-8 parameter, or no datacontenttype) that
//     is valid UTF-8 is "data", a string;
//   - anything else is "data_base64", the bytes in standard base64, as the
//     CloudEvents JSON format writes binary data.
//
// For a Pub/Sub message (type google.cloud.pubsub.topic.v1.messagePublished)
// the pseudo-field "@message" is the message data (data.message.data)
// decoded from base64, then from JSON when it is JSON; data that is not
// UTF-8 text leaves "@message" unreadable (templates read the base64 at
// data.message.data instead). It returns a [*sortie.ValidationError] when
// id, source or type is missing, JSON data is not valid JSON, or the
// Pub/Sub message data is not valid base64: a rejection.
func NewCloudEventEvent(ce CloudEvent) (*Event, error) {
	for f, v := range map[string]string{"id": ce.ID, "source": ce.Source, "type": ce.Type} {
		if v == "" {
			return nil, sortie.Invalidf("cloudevent."+f, "required attribute missing")
		}
	}
	doc := map[string]any{}
	for k, v := range ce.Extensions {
		doc[k] = v
	}
	for k, v := range map[string]string{"id": ce.ID, "source": ce.Source, "type": ce.Type, "subject": ce.Subject,
		"time": ce.Time, "specversion": ce.SpecVersion, "datacontenttype": ce.DataContentType} {
		if v != "" {
			doc[k] = v
		}
	}
	if len(ce.Data) > 0 {
		key, v, err := dataValue(ce.DataContentType, ce.Data)
		if err != nil {
			return nil, err
		}
		doc[key] = v
	}
	ev := &Event{Kind: KindCloudEvents, ID: ceIdentity(ce),
		Source: ce.Source, Type: ce.Type, Subject: ce.Subject, Doc: doc}
	ev.TraceParent, ev.TraceState = ceTrace(ce.Extensions)
	if ce.Type == pubsubPublished {
		if err := setPubSubMessage(ev); err != nil {
			return nil, err
		}
	}
	return ev, nil
}

// ceIdentity is a CloudEvent's identity: len(source) ":" source id.
func ceIdentity(ce CloudEvent) string {
	return fmt.Sprintf("%d:%s%s", len(ce.Source), ce.Source, ce.ID)
}

// dataValue returns the document field of a CloudEvent's data and its
// value: "data" for JSON and text, "data_base64" for other bytes.
func dataValue(contentType string, data []byte) (string, any, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if contentType == "" || err != nil {
		mt, params = "", nil
	}
	switch {
	case mt == "" && json.Valid(data), isJSONType(mt):
		v, err := decodeDoc(data)
		if err != nil {
			return "", nil, sortie.Invalidf("cloudevent.data", "datacontenttype %q, but the data is not JSON: %v", contentType, err)
		}
		return "data", v, nil
	case (mt == "" || strings.HasPrefix(mt, "text/") || strings.EqualFold(params["charset"], "utf-8")) && utf8.Valid(data):
		return "data", string(data), nil
	}
	return "data_base64", base64.StdEncoding.EncodeToString(data), nil
}

// isJSONType reports a JSON media type (the CloudEvents JSON format's
// rule: application/json, text/json, or a +json suffix).
func isJSONType(mt string) bool {
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// setPubSubMessage sets "@message" from data.message.data: standard
// base64, as Pub/Sub writes message data in push requests.
func setPubSubMessage(ev *Event) error {
	v, err := lookup(ev.Doc, "data.message.data")
	if err != nil {
		return nil // a message without data: attributes only
	}
	s, ok := v.(string)
	if !ok {
		return sortie.Invalidf("cloudevent.data.message.data", "a %s, want the message data in base64", kindOf(v))
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return sortie.Invalidf("cloudevent.data.message.data", "not valid base64: %v", err)
	}
	if !utf8.Valid(b) {
		ev.setExtra("@message", errors.New("@message: the Pub/Sub message data is not UTF-8 text; read its base64 at data.message.data"))
		return nil
	}
	ev.setExtra("@message", decodeIfJSON(string(b)))
	return nil
}

// RouteCloudEvent routes one CloudEvent; see [Router.Route]. A CloudEvent
// [NewCloudEventEvent] refuses is one Rejected outcome, not an error.
func (r *Router) RouteCloudEvent(ctx context.Context, ce CloudEvent) ([]Outcome, error) {
	ev, err := NewCloudEventEvent(ce)
	if err != nil {
		return []Outcome{r.rejected(KindCloudEvents, ceIdentity(ce), err)}, nil
	}
	return r.Route(ctx, ev)
}
