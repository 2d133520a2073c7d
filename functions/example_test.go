package functions_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
)

// A handler registered as "greet" runs for runtime "go:greet"; here the
// worker reports to an NDJSON stream, as `sortie worker` does on stdout.
func Example() {
	reg := functions.NewRegistry()
	reg.Register("greet", func(ctx context.Context, call *functions.Call) (any, error) {
		var v struct{ Name string }
		if err := call.Variables(&v); err != nil {
			return nil, functions.Permanent(err)
		}
		if err := call.Emit("progress", "looking up "+v.Name, map[string]int{"step": 1}); err != nil {
			return nil, err
		}
		return map[string]string{"greeting": "hello, " + strings.ToUpper(v.Name)}, nil
	})
	inv := &sortie.Invocation{
		Version: sortie.InvocationVersion, RunID: sortie.NewRunID(time.Now()), Attempt: 1,
		LaunchID: sortie.NewLaunchID(), Agent: sortie.Manifest{Name: "greet", Runtime: "go:greet"},
		Variables:  []byte(`{"name":"ada"}`),
		DeadlineMs: time.Now().Add(time.Minute).UnixMilli(), HeartbeatMs: 5000, LeaseMs: 15000,
		Report: sortie.Report{Mode: sortie.ReportControlPlane},
	}
	var out bytes.Buffer
	w := &functions.Worker{Registry: reg}
	if _, err := w.Execute(context.Background(), inv, functions.NewStreamReporter(&out)); err != nil {
		fmt.Println(err)
		return
	}
	printLines(&out)
	// Output:
	// {"event":{"seq":1,"kind":"progress","text":"looking up ada","data":{"step":1}}}
	// {"result":{"output":{"greeting":"hello, ADA"}}}
}

// printLines prints the NDJSON messages without their times, which change
// from run to run.
func printLines(r io.Reader) {
	mr := functions.NewMessageReader(r)
	for {
		m, err := mr.Next()
		if errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			fmt.Println(err)
			return
		}
		if m.Event != nil {
			m.Event.TimeMs = 0
		}
		if err := functions.WriteMessage(os.Stdout, m); err != nil {
			fmt.Println(err)
		}
	}
}
