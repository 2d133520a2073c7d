package triggers

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

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
	// Data is the event data as bytes; JSON data is decoded into the
	// event's "data" field, other data is kept as a string.
	Data []byte
	// Extensions are the extension attributes. Optional.
	Extensions map[string]any
}

// pubsubPublished is the Eventarc type of a Pub/Sub message.
const pubsubPublished = "google.cloud.pubsub.topic.v1.messagePublished"

// NewCloudEventEvent builds the [Event] of a CloudEvent. Its identity is
// len(source) ":" source id, which no two (source, id) pairs share. Its
// document holds the attributes ("id", "source", "type", "subject",
// "time", "specversion", "datacontenttype", extensions by name) and
// "data". For a Pub/Sub message (type
// google.cloud.pubsub.topic.v1.messagePublished) the pseudo-field
// "@message" is the message data decoded from base64, then from JSON when
// it is JSON. It returns a [*sortie.ValidationError] when id, source or
// type is missing.
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
		doc["data"] = decodeIfJSON(string(ce.Data))
	}
	ev := &Event{Kind: KindCloudEvents, ID: fmt.Sprintf("%d:%s%s", len(ce.Source), ce.Source, ce.ID),
		Source: ce.Source, Type: ce.Type, Subject: ce.Subject, Doc: doc}
	if ce.Type == pubsubPublished {
		if msg, err := lookup(doc, "data.message.data"); err == nil {
			ev.extra = map[string]any{"@message": decodeMessage(msg)}
		}
	}
	return ev, nil
}

// decodeMessage decodes a Pub/Sub message's base64 data.
func decodeMessage(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return s
	}
	return decodeIfJSON(string(b))
}

// RouteCloudEvent routes one CloudEvent; see [Router.Route].
func (r *Router) RouteCloudEvent(ctx context.Context, ce CloudEvent) ([]Outcome, error) {
	ev, err := NewCloudEventEvent(ce)
	if err != nil {
		return nil, err
	}
	return r.Route(ctx, ev)
}
