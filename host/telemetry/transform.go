package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	resourcev1 "go.opentelemetry.io/proto/otlp/resource/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
)

// tracesData converts spans to OTLP, grouped by resource, then by
// instrumentation scope, in the order they first appear. TracesData has
// the wire form of the OTLP/HTTP ExportTraceServiceRequest (field 1,
// resource_spans), so its bytes are the request body.
func tracesData(spans []sdktrace.ReadOnlySpan) *tracev1.TracesData {
	out := &tracev1.TracesData{}
	type key struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	resources := map[attribute.Distinct]*tracev1.ResourceSpans{}
	scopes := map[key]*tracev1.ScopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		rk := res.Equivalent()
		rs, ok := resources[rk]
		if !ok {
			rs = &tracev1.ResourceSpans{Resource: resourceProto(res), SchemaUrl: res.SchemaURL()}
			resources[rk] = rs
			out.ResourceSpans = append(out.ResourceSpans, rs)
		}
		sk := key{rk, s.InstrumentationScope()}
		ss, ok := scopes[sk]
		if !ok {
			sc := s.InstrumentationScope()
			ss = &tracev1.ScopeSpans{SchemaUrl: sc.SchemaURL, Scope: &commonv1.InstrumentationScope{
				Name: sc.Name, Version: sc.Version, Attributes: attrs(sc.Attributes.ToSlice())}}
			scopes[sk] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, spanProto(s))
	}
	return out
}

func resourceProto(r *resource.Resource) *resourcev1.Resource {
	if r == nil {
		return &resourcev1.Resource{}
	}
	return &resourcev1.Resource{Attributes: attrs(r.Attributes())}
}

func spanProto(s sdktrace.ReadOnlySpan) *tracev1.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracev1.Span{
		TraceId: tid[:], SpanId: sid[:], TraceState: sc.TraceState().String(),
		Flags: spanFlags(sc.TraceFlags(), s.Parent()), Name: s.Name(),
		Kind:              spanKind(s.SpanKind()),
		StartTimeUnixNano: uint64(s.StartTime().UnixNano()), EndTimeUnixNano: uint64(s.EndTime().UnixNano()),
		Attributes: attrs(s.Attributes()), DroppedAttributesCount: uint32(s.DroppedAttributes()),
		DroppedEventsCount: uint32(s.DroppedEvents()), DroppedLinksCount: uint32(s.DroppedLinks()),
		Status: statusProto(s.Status()),
	}
	if psid := s.Parent().SpanID(); s.Parent().IsValid() {
		p.ParentSpanId = psid[:]
	}
	for _, e := range s.Events() {
		p.Events = append(p.Events, &tracev1.Span_Event{TimeUnixNano: uint64(e.Time.UnixNano()), Name: e.Name,
			Attributes: attrs(e.Attributes), DroppedAttributesCount: uint32(e.DroppedAttributeCount)})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracev1.Span_Link{TraceId: ltid[:], SpanId: lsid[:],
			TraceState: l.SpanContext.TraceState().String(), Attributes: attrs(l.Attributes),
			DroppedAttributesCount: uint32(l.DroppedAttributeCount), Flags: spanFlags(l.SpanContext.TraceFlags(), l.SpanContext)})
	}
	return p
}

// spanFlags are the W3C trace flags and whether the parent (or linked
// span) is remote (SpanFlags HAS_IS_REMOTE and IS_REMOTE).
func spanFlags(tf trace.TraceFlags, other trace.SpanContext) uint32 {
	f := uint32(tf) | uint32(tracev1.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if other.IsRemote() {
		f |= uint32(tracev1.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return f
}

// spanKind is the OTLP span kind of k: the API and OTLP number the kinds
// alike (unspecified 0, internal, server, client, producer, consumer 5).
func spanKind(k trace.SpanKind) tracev1.Span_SpanKind {
	if k < trace.SpanKindUnspecified || k > trace.SpanKindConsumer {
		return tracev1.Span_SPAN_KIND_UNSPECIFIED
	}
	return tracev1.Span_SpanKind(k)
}

// statusProto maps the SDK's status codes (Unset 0, Error 1, Ok 2) to
// OTLP's (Unset 0, Ok 1, Error 2).
func statusProto(st sdktrace.Status) *tracev1.Status {
	s := &tracev1.Status{}
	switch st.Code {
	case codes.Ok:
		s.Code = tracev1.Status_STATUS_CODE_OK
	case codes.Error:
		s.Code, s.Message = tracev1.Status_STATUS_CODE_ERROR, st.Description
	}
	return s
}

func attrs(kvs []attribute.KeyValue) []*commonv1.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonv1.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonv1.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonv1.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), attribute.StringValue)
	case attribute.STRING:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BYTESLICE:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.SLICE:
		return array(v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_KvlistValue{KvlistValue: &commonv1.KeyValueList{Values: attrs(v.AsMap())}}}
	case attribute.EMPTY:
		return &commonv1.AnyValue{}
	}
	return &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: "INVALID"}}
}

func array[T any](vs []T, of func(T) attribute.Value) *commonv1.AnyValue {
	a := &commonv1.ArrayValue{}
	for _, v := range vs {
		a.Values = append(a.Values, anyValue(of(v)))
	}
	return &commonv1.AnyValue{Value: &commonv1.AnyValue_ArrayValue{ArrayValue: a}}
}
