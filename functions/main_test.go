package functions_test

import (
	"context"
	"os"
	"testing"

	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
)

// sessionWorkerEnv makes the test binary a session worker: the warm
// process of the pool tests.
const sessionWorkerEnv = "SORTIE_TEST_SESSION_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(sessionWorkerEnv) == "1" {
		os.Exit(serveSession())
	}
	os.Exit(m.Run())
}

// serveSession serves the probe and "config" (returns the attempt's inline
// configuration) over the session protocol on stdin and stdout.
func serveSession() int {
	reg := functions.NewRegistry()
	probe.Register(reg)
	reg.Register("config", func(_ context.Context, c *functions.Call) (any, error) { return c.Config(), nil })
	w := &functions.Worker{Registry: reg}
	if err := w.ServeSession(context.Background(), os.Stdin, os.Stdout); err != nil {
		os.Stderr.WriteString("session worker: " + err.Error() + "\n")
		return 1
	}
	return 0
}
