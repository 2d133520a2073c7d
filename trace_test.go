package sortie

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TraceContextOf hands on a tracestate that fits whole, and drops list
// members from the end of one that does not, keeping the traceparent.
func TestTraceContextOfClipsTraceState(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var members []string
	for i := range 20 {
		members = append(members, fmt.Sprintf("v%02d=%s", i, strings.Repeat("x", 40)))
	}
	long := strings.Join(members, ",") // 20 members of 44 bytes: 899 bytes
	for _, tc := range []struct{ in, want string }{
		{"rojo=00f067aa0ba902b7", "rojo=00f067aa0ba902b7"},
		{long, strings.Join(members[:11], ",")}, // 11*44+10 = 494 bytes; 12 would be 539
		{"", ""},
	} {
		gotTP, gotTS := TraceContextOf(ContextWithTrace(context.Background(), tp, tc.in))
		if gotTP != tp || gotTS != tc.want || len(gotTS) > MaxTraceStateBytes {
			t.Errorf("TraceContextOf(tracestate of %d bytes) = %q, %d bytes %q; want %q, %d bytes", len(tc.in), gotTP, len(gotTS), gotTS, tp, len(tc.want))
		}
	}
	if tp, ts := TraceContextOf(ContextWithTrace(context.Background(), "not-a-traceparent", "a=b")); tp != "" || ts != "" {
		t.Errorf("TraceContextOf(malformed traceparent) = %q, %q; want none", tp, ts)
	}
}
