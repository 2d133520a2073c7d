package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
)

const secretValue = "host-canary-93b2-not-for-logs"

func submitConfig(t *testing.T, h *host.Host, config string) (*sortie.Run, error) {
	t.Helper()
	return h.Client().Submit(context.Background(), &sortie.SubmitRequest{Agent: "probe",
		Variables: json.RawMessage(`{"events":1}`), Config: json.RawMessage(config)})
}

func TestInlineConfigIsOffByDefault(t *testing.T) {
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true})
	_, err := submitConfig(t, h, `{"API_TOKEN":"`+secretValue+`"}`)
	if !errors.Is(err, sortie.ErrInvalidArgument) || !strings.Contains(err.Error(), "off") {
		t.Errorf("Submit(config) without ConfigEnv = %v, want an invalid-argument error saying it is off", err)
	}
	if _, err := os.Stat(filepath.Join(h.StateDir(), host.LocalKeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat %s = %v, want no key file while inline configuration is off", host.LocalKeyFile, err)
	}
}

// With ConfigEnv the embedded host seals with a local key file (mode
// 0600) in the state directory, the in-process worker opens it, and the
// SQLite files never hold the value.
func TestInlineConfigOnTheEmbeddedHost(t *testing.T) {
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true, ConfigEnv: []string{"API_TOKEN"}})
	ok, err := submitConfig(t, h, `{"API_TOKEN":"`+secretValue+`"}`)
	if err != nil {
		t.Fatalf("Submit(config) = %v", err)
	}
	denied, err := submitConfig(t, h, `{"OTHER":"`+secretValue+`"}`)
	if err != nil {
		t.Fatalf("Submit(config) = %v", err)
	}
	if run := wait(t, h.Client(), ok.ID); run.State != sortie.StateCompleted {
		t.Fatalf("Wait(%s) = %+v; want completed", ok.ID, run)
	}
	if run := wait(t, h.Client(), denied.ID); run.State != sortie.StateRejected || !strings.Contains(run.Reason, "OTHER") {
		t.Fatalf("Wait(%s) = %+v; want rejected naming OTHER", denied.ID, run)
	}
	st, err := os.Stat(filepath.Join(h.StateDir(), host.LocalKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("stat %s = %v, %v; want mode 0600", host.LocalKeyFile, st, err)
	}
	files, _ := filepath.Glob(filepath.Join(h.StateDir(), host.StateFile+"*"))
	for _, f := range files {
		if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(secretValue)) {
			t.Errorf("%s contains the configuration value", filepath.Base(f))
		}
	}
}
