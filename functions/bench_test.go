package functions_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
)

// BenchmarkExecuteStream measures the runtime's own cost per attempt: a
// probe with 3 events reported to an NDJSON stream.
func BenchmarkExecuteStream(b *testing.B) {
	w := stdioWorker()
	cp := memory.New()
	defer cp.Close()
	inv := launched(b, cp, `{"events":3}`)
	rep := functions.NewStreamReporter(io.Discard)
	for b.Loop() {
		if _, err := w.Execute(context.Background(), inv, rep); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecuteControlPlane measures claim, 3 events and finish against
// the memory control plane.
func BenchmarkExecuteControlPlane(b *testing.B) {
	w := stdioWorker()
	cp := memory.New()
	defer cp.Close()
	for b.Loop() {
		b.StopTimer()
		inv := launched(b, cp, `{"events":3}`)
		b.StartTimer()
		o, err := w.Execute(context.Background(), inv, functions.NewControlPlaneReporter(cp, inv, "bench"))
		if err != nil || !json.Valid(o.Result) {
			b.Fatalf("Execute = %+v, %v", o, err)
		}
	}
}
