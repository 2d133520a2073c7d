package memory_test

import (
	"context"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/memory"
)

type harness struct{ made []*memory.ControlPlane }

func (h *harness) MakeControlPlane(context.Context, *testing.T) sortie.ControlPlane {
	cp := memory.New()
	h.made = append(h.made, cp)
	return cp
}

func (h *harness) SharedAcrossProcesses() bool { return false }

func (h *harness) MakePeer(_ context.Context, t *testing.T, _ sortie.ControlPlane) sortie.ControlPlane {
	t.Fatalf("memory: MakePeer called, but a memory control plane is not shared")
	return nil
}

func (h *harness) Notifies() bool { return true }

func (h *harness) LimitsRunSize() bool { return false }

func (h *harness) Close() {
	for _, cp := range h.made {
		cp.Close()
	}
}

func TestConformance(t *testing.T) {
	controlplanetest.RunConformanceTests(t, func(*testing.T) controlplanetest.Harness { return &harness{} })
}
