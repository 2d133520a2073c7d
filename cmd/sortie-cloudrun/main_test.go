package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
)

// A bad configuration (two control planes, a keyring entry that is not
// ID=KEY, a Cloud KMS key name that is not one) stops the container before
// anything runs, naming the variable, with exit status 2.
func TestBadEnvironment(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sortie-cloudrun")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	inv := fncloudrun.EnvInvocation + "={}"
	for name, env := range map[string][]string{
		fncloudrun.EnvSQLitePath: {inv, fncloudrun.EnvSQLitePath + "=/tmp/x.db", fncloudrun.EnvDynamoTable + "=runs"},
		fncloudrun.EnvKMSKeys:    {inv, fncloudrun.EnvKMSKeys + "=k1=keyRings/x"},
	} {
		cmd := exec.Command(bin)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !strings.Contains(string(out), name) || !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("sortie-cloudrun with %v = %v, output %q; want exit status 2 naming %s", env, err, out, name)
		}
	}
}

// An invocation that is not valid fails the task (exit status 1) and
// names the variable.
func TestInvalidInvocation(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sortie-cloudrun")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{fncloudrun.EnvInvocation + `={"version":"v0"}`, fncloudrun.EnvSQLitePath + "=" + filepath.Join(t.TempDir(), "sortie.db")}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !strings.Contains(string(out), fncloudrun.EnvInvocation) || !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("sortie-cloudrun with an invalid invocation = %v, output %q; want exit status 1 naming %s", err, out, fncloudrun.EnvInvocation)
	}
}

// Service mode without its ID token audience refuses to start, naming the
// variable, with exit status 2.
func TestServiceModeNeedsAudience(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sortie-cloudrun")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{fncloudrun.EnvMode + "=service", fncloudrun.EnvSQLitePath + "=" + filepath.Join(t.TempDir(), "sortie.db")}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !strings.Contains(string(out), fncloudrun.EnvAudience) || !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("sortie-cloudrun in service mode without %s = %v, output %q; want exit status 2 naming it", fncloudrun.EnvAudience, err, out)
	}
}
