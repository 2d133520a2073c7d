package dynamo_test

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

// harness makes control planes on a new table per test; a peer is a second
// handle with its own client on the same table, as another process has.
// Each table is a deployment with a page-token key of its own, which its
// peers share.
type harness struct {
	t      *testing.T
	tables map[sortie.ControlPlane]string
	keys   map[string][]byte
}

func newHarness(t *testing.T) controlplanetest.Harness {
	return &harness{t: t, tables: map[sortie.ControlPlane]string{}, keys: map[string][]byte{}}
}

func (h *harness) MakeControlPlane(_ context.Context, t *testing.T) sortie.ControlPlane {
	db, table := newTable(t)
	h.keys[table] = make([]byte, 32)
	rand.Read(h.keys[table])
	cp := open(t, db, table, &dynamo.Options{PageTokenKey: h.keys[table]})
	h.tables[cp] = table
	return cp
}

func (h *harness) SharedAcrossProcesses() bool { return true }

func (h *harness) MakePeer(_ context.Context, t *testing.T, cp sortie.ControlPlane) sortie.ControlPlane {
	table, ok := h.tables[cp]
	if !ok {
		t.Fatalf("MakePeer(%T): not a control plane of this harness", cp)
	}
	peer := open(t, newClient(), table, &dynamo.Options{PageTokenKey: h.keys[table]})
	h.tables[peer] = table
	return peer
}

func (h *harness) Notifies() bool { return true }

func (h *harness) LimitsRunSize() bool { return true }

func (h *harness) Close() {}

func TestConformance(t *testing.T) {
	controlplanetest.RunConformanceTests(t, newHarness)
}

var _ dynamo.API = (*dynamodb.Client)(nil)
