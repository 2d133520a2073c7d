package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/sqlite"
)

// harness opens control planes on files in a test's temporary directory.
type harness struct {
	dir   string
	paths map[sortie.ControlPlane]string
	open  []*sqlite.ControlPlane
}

func newHarness(t *testing.T) controlplanetest.Harness {
	return &harness{dir: t.TempDir(), paths: map[sortie.ControlPlane]string{}}
}

func (h *harness) openPath(t *testing.T, path string) *sqlite.ControlPlane {
	t.Helper()
	cp, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatalf("sqlite.Open(%s) = %v, want success", path, err)
	}
	h.open = append(h.open, cp)
	h.paths[cp] = path
	return cp
}

func (h *harness) MakeControlPlane(_ context.Context, t *testing.T) sortie.ControlPlane {
	return h.openPath(t, filepath.Join(h.dir, fmt.Sprintf("cp%d.db", len(h.open))))
}

func (h *harness) SharedAcrossProcesses() bool { return true }

func (h *harness) MakePeer(_ context.Context, t *testing.T, cp sortie.ControlPlane) sortie.ControlPlane {
	path, ok := h.paths[cp]
	if !ok {
		t.Fatalf("MakePeer(%T): not a control plane of this harness", cp)
	}
	return h.openPath(t, path)
}

func (h *harness) Notifies() bool { return true }

func (h *harness) LimitsRunSize() bool { return false }

func (h *harness) Close() {
	for _, cp := range h.open {
		cp.Close()
	}
}

func TestConformance(t *testing.T) {
	controlplanetest.RunConformanceTests(t, newHarness)
}
