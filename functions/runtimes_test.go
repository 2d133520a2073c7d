package functions

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

func TestLoadExecRuntimesResolvesPaths(t *testing.T) {
	specs, err := LoadExecRuntimes("testdata/runtimes.json")
	if err != nil {
		t.Fatalf("LoadExecRuntimes(testdata/runtimes.json) = %v", err)
	}
	dir, _ := filepath.Abs("testdata")
	want := map[string]ExecSpec{
		"env": {Command: []string{"/bin/sh", "env.sh"}, Dir: dir, // runs in dir, so env.sh resolves
			Env: []string{"FOO=bar", "PATH=/usr/bin:/bin"}, GraceMs: 100},
		"rel": {Command: []string{filepath.Join(dir, "env.sh"), "-x", "--flag=a/b", filepath.Join(dir, "sub/file"), "/abs/path", "plain"},
			Dir: filepath.Join(dir, "sub"), Env: []string{}},
	}
	if d := cmp.Diff(want, specs); d != "" {
		t.Errorf("LoadExecRuntimes (-want +got):\n%s", d)
	}
}

func TestLoadExampleRuntimes(t *testing.T) {
	specs, err := LoadExecRuntimes("../examples/runtimes.json")
	if err != nil {
		t.Fatalf("LoadExecRuntimes(examples/runtimes.json) = %v", err)
	}
	python, _ := exec.LookPath("python3")
	worker, _ := filepath.Abs("../examples/wordfreq-py/worker.py")
	if got := specs["wordfreq-py"]; !cmp.Equal(got.Command, []string{python, worker}) || got.Protocol != SessionVersion {
		t.Errorf("wordfreq-py = command %q protocol %q, want [%s %s] and %s", got.Command, got.Protocol, python, worker, SessionVersion)
	}
}

func TestLoadExecRuntimesErrors(t *testing.T) {
	tests := []struct {
		name, file, field string
	}{
		{"version", `{"version":"v0","runtimes":{}}`, "version"},
		{"trailing brace", `{"version":"sortie.runtimes/v1","runtimes":{}}}`, "runtimes"},
		{"trailing bracket", `{"version":"sortie.runtimes/v1","runtimes":{}}]`, "runtimes"},
		{"two values", `{"version":"sortie.runtimes/v1","runtimes":{}} {}`, "runtimes"},
		{"unknown field", `{"version":"sortie.runtimes/v1","runtimes":{"a":{"command":["/bin/sh"],"shell":true}}}`, "runtimes"},
		{"bad ID", `{"version":"sortie.runtimes/v1","runtimes":{"../x":{"command":["/bin/sh"]}}}`, "runtimes.../x"},
		{"no command", `{"version":"sortie.runtimes/v1","runtimes":{"a":{"command":[]}}}`, "runtimes.a.command"},
		{"missing program", `{"version":"sortie.runtimes/v1","runtimes":{"a":{"command":["./nope.sh"]}}}`, "runtimes.a.command"},
		{"program not in PATH", `{"version":"sortie.runtimes/v1","runtimes":{"a":{"command":["no-such-program-here"]}}}`, "runtimes.a.command"},
		{"bad env key", `{"version":"sortie.runtimes/v1","runtimes":{"a":{"command":["/bin/sh"],"env":{"A=B":"1"}}}}`, "runtimes.a.env"},
		{"grace", `{"version":"sortie.runtimes/v1","runtimes":{"a":{"command":["/bin/sh"],"grace_ms":-1}}}`, "runtimes.a.grace_ms"},
		{"protocol", `{"version":"sortie.runtimes/v1","runtimes":{"a":{"command":["/bin/sh"],"protocol":"sortie.session/v9"}}}`, "runtimes.a.protocol"},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), "runtimes.json")
		if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadExecRuntimes(path)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != tt.field {
			t.Errorf("%s: LoadExecRuntimes = %v, want a ValidationError for %s", tt.name, err, tt.field)
		}
	}
	if _, err := LoadExecRuntimes(filepath.Join(t.TempDir(), "absent.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadExecRuntimes(absent file) = %v, want os.ErrNotExist", err)
	}
}
