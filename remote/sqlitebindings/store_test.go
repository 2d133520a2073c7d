package sqlitebindings_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sortie-run/sortie/remote"
	"github.com/sortie-run/sortie/remote/bindingtest"
	"github.com/sortie-run/sortie/remote/sqlitebindings"
)

func open(tb testing.TB, path string) *sqlitebindings.Store {
	tb.Helper()
	s, err := sqlitebindings.Open(path, nil)
	if err != nil {
		tb.Fatalf("Open(%s) = %v", path, err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	bindingtest.Run(t, func(tb testing.TB) remote.BindingStore {
		return open(tb, filepath.Join(tb.TempDir(), "bindings.db"))
	})
}

func TestRecordsSurviveReopening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bindings.db")
	a := open(t, path)
	ctx := context.Background()
	want := &remote.BindingRecord{Node: "n", Key: "k", AgentURL: "https://agent.example", TaskID: "t",
		CreatedMs: time.Now().UnixMilli(), UpdatedMs: time.Now().UnixMilli()}
	if err := a.PutBinding(ctx, want); err != nil {
		t.Fatalf("PutBinding = %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	got, err := open(t, path).GetBinding(ctx, "n", "k")
	if err != nil || *got != *want {
		t.Errorf("GetBinding after reopening = %+v, %v; want %+v", got, err, want)
	}
}
