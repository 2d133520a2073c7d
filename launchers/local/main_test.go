package local_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "local-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "local tests: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	sortieBin = filepath.Join(dir, "sortie")
	build := exec.Command("go", "build", "-o", sortieBin, "github.com/sortie-run/sortie/cmd/sortie")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "local tests: go build cmd/sortie:", err)
		return 1
	}
	return m.Run()
}
