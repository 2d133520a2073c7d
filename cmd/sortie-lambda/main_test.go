package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	fnlambda "github.com/sortie-run/sortie/functions/lambda"
)

// The bootstrap stays lean: none of the CLI's or other hosts' heavy
// dependencies are linked in.
func TestLeanDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, heavy := range []string{"modernc.org/sqlite", "github.com/spf13/cobra", "google.golang.org/grpc", "cloud.google.com/go",
		"github.com/a2aproject/a2a-go", "github.com/hashicorp/hcl", "github.com/santhosh-tekuri/jsonschema",
		"github.com/sortie-run/sortie/server"} {
		if strings.Contains(string(out), heavy+"\n") || strings.Contains(string(out), heavy+"/") {
			t.Errorf("sortie-lambda depends on %s, want it left out of the bootstrap", heavy)
		}
	}
	// The API host (package host) is left out; its lean AWS part is in.
	if !strings.Contains(string(out), "github.com/sortie-run/sortie/host/awshost\n") || strings.Contains(string(out), "github.com/sortie-run/sortie/host\n") {
		t.Errorf("sortie-lambda's packages:\n%s\nwant host/awshost and not host", out)
	}
}

// Without its table the function refuses to start, naming the variable,
// with exit status 2.
func TestMissingEnvironment(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bootstrap")
	if out, err := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !strings.Contains(string(out), fnlambda.EnvTable) || err == nil || !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("bootstrap without %s = %v, output %q; want exit status 2 naming it", fnlambda.EnvTable, err, out)
	}
}
