package telemetry_test

import (
	"context"
	"fmt"

	"github.com/sortie-run/sortie/host/telemetry"
)

// A binary starts tracing first, flushes at the end of each unit of work
// (a Lambda invocation), and shuts it down when it exits.
func ExampleStartTracing() {
	tracing, err := telemetry.StartTracing(context.Background())
	if err != nil {
		fmt.Println("tracing:", err)
		return
	}
	defer tracing.Shutdown()
	// ... handle an invocation ...
	fmt.Println(tracing.Flush(context.Background()))
	// Output: <nil>
}
