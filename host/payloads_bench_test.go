package host_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
)

// BenchmarkLargePayloadRun measures a whole run on the embedded host
// (SQLite, in-process worker, fileblob payloads) whose variables and
// result are both N bytes and so kept by reference, against a run with
// small ones ("0MB"): submit, wait for the result, read it back with Get.
//
//	go test ./host -run '^$' -bench LargePayloadRun -benchtime 10x
func BenchmarkLargePayloadRun(b *testing.B) {
	for _, size := range []int{0, 1 << 20, 10 << 20} {
		b.Run(fmt.Sprintf("%dMB", size>>20), func(b *testing.B) {
			h, err := host.New(b.Context(), host.Config{StateDir: b.TempDir(), InProcess: true})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			vars, _ := json.Marshal(map[string]string{"output": strings.Repeat("y", size)})
			for b.Loop() {
				run, err := h.Client().Submit(b.Context(), &sortie.SubmitRequest{Agent: "probe", Variables: vars})
				if err != nil {
					b.Fatal(err)
				}
				if run, err = h.Client().Wait(b.Context(), run.ID); err != nil || run.State != sortie.StateCompleted {
					b.Fatalf("Wait = %v, %v", run, err)
				}
				if got, err := h.Client().Get(b.Context(), run.ID); err != nil || len(got.Result) != size+2 {
					b.Fatalf("Get = %d bytes of result, %v; want %d", len(got.Result), err, size+2)
				}
			}
		})
	}
}
