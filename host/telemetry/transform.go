package telemetry

import (
	"encoding/binary"
	"math"
	"reflect"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The OTLP protobuf encoding, written with encoding/binary (the protobuf
// wire format: a tag of field number << 3 | wire type as a varint, then
// a varint, 4 or 8 little-endian bytes, or a length-prefixed value) rather
// than the generated message types (go.opentelemetry.io/proto/otlp),
// which link the protobuf runtime: about 1.5 MiB of the Lambda bootstrap.
// Field numbers are those of opentelemetry/proto/{collector/trace,trace,
// common,resource}/v1; zero values are left out, as proto3 does.
// TestExporterMatchesTheSDKExporter decodes the result with the generated
// types.

// msg is a message being encoded.
type msg []byte

// Wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func (m msg) tag(n, wire int) msg { return binary.AppendUvarint(m, uint64(n)<<3|uint64(wire)) }

// bytes appends b as field n unless it is empty.
func (m msg) bytes(n int, b []byte) msg {
	if len(b) == 0 {
		return m
	}
	return m.sub(n, b)
}

func (m msg) str(n int, s string) msg { return m.bytes(n, []byte(s)) }

// sub appends a length-prefixed value, even an empty one (a nested
// message that is present).
func (m msg) sub(n int, b []byte) msg {
	m = binary.AppendUvarint(m.tag(n, wireBytes), uint64(len(b)))
	return append(m, b...)
}

func (m msg) varint(n int, v uint64) msg {
	if v == 0 {
		return m
	}
	return binary.AppendUvarint(m.tag(n, wireVarint), v)
}

func (m msg) fixed32(n int, v uint32) msg {
	if v == 0 {
		return m
	}
	return binary.LittleEndian.AppendUint32(m.tag(n, wireFixed32), v)
}

func (m msg) fixed64(n int, v uint64) msg {
	if v == 0 {
		return m
	}
	return binary.LittleEndian.AppendUint64(m.tag(n, wireFixed64), v)
}

// exportRequest encodes spans as an ExportTraceServiceRequest: one
// resource spans (field 1) of the spans' resource, with a scope spans per
// instrumentation scope, in the order they first appear. An exporter
// serves one tracer provider, whose spans all share its resource.
func exportRequest(spans []sdktrace.ReadOnlySpan) []byte {
	if len(spans) == 0 {
		return nil
	}
	var scopes []instrumentation.Scope
	var bodies []msg
	for _, s := range spans {
		sc := s.InstrumentationScope()
		i := slices.Index(scopes, sc)
		if i < 0 {
			i = len(scopes)
			scopes = append(scopes, sc)
			bodies = append(bodies, msg(nil).sub(1, msg(nil).str(1, sc.Name).str(2, sc.Version).attrs(3, sc.Attributes.ToSlice())))
		}
		bodies[i] = bodies[i].sub(2, span(s))
	}
	res := spans[0].Resource()
	rs := msg(nil).sub(1, msg(nil).attrs(1, res.Attributes()))
	for i, b := range bodies {
		rs = rs.sub(2, b.str(3, scopes[i].SchemaURL))
	}
	return msg(nil).sub(1, rs.str(3, res.SchemaURL()))
}

func span(s sdktrace.ReadOnlySpan) msg {
	sc, parent := s.SpanContext(), s.Parent()
	tid, sid := sc.TraceID(), sc.SpanID()
	m := msg(nil).bytes(1, tid[:]).bytes(2, sid[:]).str(3, sc.TraceState().String())
	if psid := parent.SpanID(); parent.IsValid() {
		m = m.bytes(4, psid[:])
	}
	m = m.str(5, s.Name()).varint(6, uint64(spanKind(s.SpanKind()))).
		fixed64(7, uint64(s.StartTime().UnixNano())).fixed64(8, uint64(s.EndTime().UnixNano())).
		attrs(9, s.Attributes()).varint(10, uint64(s.DroppedAttributes()))
	for _, e := range s.Events() {
		ev := msg(nil).fixed64(1, uint64(e.Time.UnixNano())).str(2, e.Name).attrs(3, e.Attributes).varint(4, uint64(e.DroppedAttributeCount))
		m = m.sub(11, ev)
	}
	m = m.varint(12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		lk := msg(nil).bytes(1, ltid[:]).bytes(2, lsid[:]).str(3, l.SpanContext.TraceState().String()).
			attrs(4, l.Attributes).varint(5, uint64(l.DroppedAttributeCount)).fixed32(6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		m = m.sub(13, lk)
	}
	m = m.varint(14, uint64(s.DroppedLinks())).sub(15, status(s.Status()))
	return m.fixed32(16, spanFlags(sc.TraceFlags(), parent))
}

// spanFlags are the W3C trace flags and whether the parent (or the linked
// span) is remote: SpanFlags HAS_IS_REMOTE (0x100) and IS_REMOTE (0x200).
func spanFlags(tf trace.TraceFlags, other trace.SpanContext) uint32 {
	f := uint32(tf) | 0x100
	if other.IsRemote() {
		f |= 0x200
	}
	return f
}

// spanKind is the OTLP span kind of k: the API and OTLP number the kinds
// alike (unspecified 0, internal, server, client, producer, consumer 5).
func spanKind(k trace.SpanKind) trace.SpanKind {
	if k < trace.SpanKindUnspecified || k > trace.SpanKindConsumer {
		return trace.SpanKindUnspecified
	}
	return k
}

// status maps the SDK's status codes (Unset 0, Error 1, Ok 2) to OTLP's
// Status (message 2, code 3: Unset 0, Ok 1, Error 2).
func status(st sdktrace.Status) msg {
	switch st.Code {
	case codes.Ok:
		return msg(nil).varint(3, 1)
	case codes.Error:
		return msg(nil).str(2, st.Description).varint(3, 2)
	}
	return nil
}

// attrs appends each attribute as a KeyValue (key 1, value 2) in field n.
func (m msg) attrs(n int, kvs []attribute.KeyValue) msg {
	for _, kv := range kvs {
		m = m.sub(n, msg(nil).str(1, string(kv.Key)).sub(2, anyValue(kv.Value)))
	}
	return m
}

// anyValue encodes an AnyValue: string 1, bool 2, int 3, double 4, array
// 5, key-value list 6, bytes 7. Its one field is written even when zero.
func anyValue(v attribute.Value) msg {
	m := msg(nil)
	switch v.Type() {
	case attribute.STRING:
		return m.sub(1, []byte(v.AsString()))
	case attribute.BOOL:
		b := uint64(0)
		if v.AsBool() {
			b = 1
		}
		return binary.AppendUvarint(m.tag(2, wireVarint), b)
	case attribute.INT64:
		return binary.AppendUvarint(m.tag(3, wireVarint), uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return binary.LittleEndian.AppendUint64(m.tag(4, wireFixed64), math.Float64bits(v.AsFloat64()))
	case attribute.BYTESLICE:
		return m.sub(7, v.AsByteSlice())
	case attribute.MAP:
		return m.sub(6, msg(nil).attrs(1, v.AsMap()))
	case attribute.EMPTY:
		return m
	}
	if rv := reflect.ValueOf(v.AsInterface()); rv.Kind() == reflect.Slice {
		// BOOLSLICE, INT64SLICE, FLOAT64SLICE, STRINGSLICE, SLICE.
		arr := msg(nil)
		for i := range rv.Len() {
			arr = arr.sub(1, anyValue(elemValue(rv.Index(i).Interface())))
		}
		return m.sub(5, arr)
	}
	return m.sub(1, []byte("INVALID"))
}

// elemValue is the attribute value of a slice attribute's element.
func elemValue(e any) attribute.Value {
	switch e := e.(type) {
	case bool:
		return attribute.BoolValue(e)
	case int64:
		return attribute.Int64Value(e)
	case float64:
		return attribute.Float64Value(e)
	case string:
		return attribute.StringValue(e)
	case attribute.Value:
		return e
	}
	return attribute.Value{}
}
