package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxBootstrapBytes is the most the stripped arm64 bootstrap may weigh:
// 12 MiB (DESIGN.md, performance targets). It is a limit, not a speed:
// the function's package size and its cold start grow with it.
const maxBootstrapBytes = 12 << 20

// TestBootstrapSize builds the function as its doc comment says (arm64,
// lambda.norpc, trimmed paths, stripped) and fails when the binary is over
// the limit. When it fails, measure with `go tool nm -size -sort size` on
// an unstripped build: each package linked in adds up.
func TestBootstrapSize(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
	info, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bootstrap: %d bytes (%.2f MiB), limit %d", info.Size(), float64(info.Size())/(1<<20), maxBootstrapBytes)
	if info.Size() > maxBootstrapBytes {
		t.Errorf("stripped arm64 bootstrap is %d bytes (%.2f MiB), over the limit of %d (12 MiB)", info.Size(), float64(info.Size())/(1<<20), maxBootstrapBytes)
	}
}
