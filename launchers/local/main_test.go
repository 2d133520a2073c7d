package local_test

import (
	"os"
	"testing"

	"github.com/sortie-run/sortie/internal/testbin"
)

// sortieBin is the sortie binary TestMain builds for the subprocess
// harness: its `sortie worker` is the worker command.
var sortieBin string

func TestMain(m *testing.M) {
	if os.Getenv(startAndExitEnv) != "" {
		os.Exit(startAndExit())
	}
	if os.Getenv(claimGateEnv) != "" {
		os.Exit(passClaimGate())
	}
	if os.Getenv(holdLockEnv) != "" {
		os.Exit(holdLock())
	}
	os.Exit(testbin.Main(m, "github.com/sortie-run/sortie/cmd/sortie", &sortieBin))
}
