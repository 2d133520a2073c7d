package httpengine

import (
	"strings"
	"testing"
)

// FuzzReadSSE feeds arbitrary streams to the SSE reader and the update
// decoder: no panic, and every dispatched event has the fields of its
// lines (data lines joined by "\n").
func FuzzReadSSE(f *testing.F) {
	f.Add("retry: 1000\n\nid: 1.1\nevent: event\ndata: {\"kind\":\"x\",\"seq\":1,\"attempt\":1}\n\n")
	f.Add("event: run\ndata: {\"id\":\"x\",\"state\":\"completed\"}\n\n")
	f.Add(": keepalive\n\nevent: error\ndata: {\"error\":{\"code\":\"not_found\"}}\n\n")
	f.Add("data: a\ndata: b\n\nid\nevent\n:\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		n := 0
		err := readSSE(strings.NewReader(s), func(ev sseEvent) bool {
			n++
			if strings.Contains(ev.id, "\n") || strings.Contains(ev.event, "\n") {
				t.Fatalf("event %d has a newline in id %q or event %q", n, ev.id, ev.event)
			}
			_, _, _ = decodeUpdate(ev)
			return true
		})
		if err != nil && !strings.Contains(err.Error(), "token too long") {
			t.Fatalf("readSSE(%q) = %v", s, err)
		}
	})
}
