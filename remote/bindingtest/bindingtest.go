package bindingtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote"
)

// Run runs the suite; newStore returns an empty store, closed by tb's
// cleanup if it needs closing.
func Run(t *testing.T, newStore func(tb testing.TB) remote.BindingStore) {
	for _, c := range []struct {
		name string
		test func(*testing.T, remote.BindingStore)
	}{
		{"PutThenGet", testPutThenGet},
		{"GetMissing", testGetMissing},
		{"PutReplacesKeepsBirth", testPutReplaces},
		{"DeleteByTask", testDeleteByTask},
		{"ListByNode", testListByNode},
		{"RefusesBadInput", testRefusesBadInput},
		{"ConcurrentKeys", testConcurrentKeys},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, newStore(t)) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// record returns a valid record of node and key naming task.
func record(node, key, task string) *remote.BindingRecord {
	now := time.Now().UnixMilli()
	return &remote.BindingRecord{Node: node, Key: key, AgentURL: "https://agent.example/a2a", TaskID: task,
		ContextID: "ctx-" + task, Skill: "probe", MessageID: "msg-" + task, CreatedMs: now, UpdatedMs: now}
}

func put(t *testing.T, s remote.BindingStore, r *remote.BindingRecord) {
	t.Helper()
	if err := s.PutBinding(ctx(t), r); err != nil {
		t.Fatalf("PutBinding(%s/%s) = %v", r.Node, r.Key, err)
	}
}

func testPutThenGet(t *testing.T, s remote.BindingStore) {
	want := record("n", "run-1/step", "task-1")
	put(t, s, want)
	got, err := s.GetBinding(ctx(t), "n", "run-1/step")
	if err != nil {
		t.Fatalf("GetBinding = %v", err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("GetBinding after PutBinding (-want +got):\n%s", d)
	}
}

func testGetMissing(t *testing.T, s remote.BindingStore) {
	put(t, s, record("n", "k", "task-1"))
	for _, k := range [][2]string{{"n", "other"}, {"m", "k"}} {
		if _, err := s.GetBinding(ctx(t), k[0], k[1]); !errors.Is(err, remote.ErrBindingNotFound) {
			t.Errorf("GetBinding(%s, %s) = %v, want ErrBindingNotFound", k[0], k[1], err)
		}
	}
}

func testPutReplaces(t *testing.T, s remote.BindingStore) {
	first := record("n", "k", "task-1")
	first.CreatedMs = 1000
	put(t, s, first)
	second := record("n", "k", "task-2")
	put(t, s, second)
	got, err := s.GetBinding(ctx(t), "n", "k")
	if err != nil {
		t.Fatalf("GetBinding = %v", err)
	}
	want := *second
	want.CreatedMs = 1000
	if d := cmp.Diff(&want, got); d != "" {
		t.Errorf("GetBinding after a second PutBinding (-want +got); the record is replaced, its CreatedMs kept:\n%s", d)
	}
}

func testDeleteByTask(t *testing.T, s remote.BindingStore) {
	put(t, s, record("n", "k", "task-2"))
	if err := s.DeleteBinding(ctx(t), "n", "k", "task-1"); err != nil {
		t.Fatalf("DeleteBinding(another task) = %v", err)
	}
	if _, err := s.GetBinding(ctx(t), "n", "k"); err != nil {
		t.Errorf("GetBinding after deleting another task's record = %v, want the record kept", err)
	}
	if err := s.DeleteBinding(ctx(t), "n", "k", "task-2"); err != nil {
		t.Fatalf("DeleteBinding(its task) = %v", err)
	}
	if _, err := s.GetBinding(ctx(t), "n", "k"); !errors.Is(err, remote.ErrBindingNotFound) {
		t.Errorf("GetBinding after DeleteBinding = %v, want ErrBindingNotFound", err)
	}
	if err := s.DeleteBinding(ctx(t), "n", "k", ""); err != nil {
		t.Errorf("DeleteBinding(missing) = %v, want nil", err)
	}
	put(t, s, record("n", "k", "task-3"))
	if err := s.DeleteBinding(ctx(t), "n", "k", ""); err != nil {
		t.Fatalf("DeleteBinding(any task) = %v", err)
	}
	if _, err := s.GetBinding(ctx(t), "n", "k"); !errors.Is(err, remote.ErrBindingNotFound) {
		t.Errorf("GetBinding after DeleteBinding of any task = %v, want ErrBindingNotFound", err)
	}
}

func testListByNode(t *testing.T, s remote.BindingStore) {
	for _, r := range []*remote.BindingRecord{record("b", "2", "t1"), record("a", "9", "t2"), record("b", "1", "t3")} {
		put(t, s, r)
	}
	keys := func(node string) []string {
		recs, err := s.ListBindings(ctx(t), node)
		if err != nil {
			t.Fatalf("ListBindings(%q) = %v", node, err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, r.Node+"/"+r.Key+"="+r.TaskID)
		}
		return out
	}
	if d := cmp.Diff([]string{"b/1=t3", "b/2=t1"}, keys("b")); d != "" {
		t.Errorf("ListBindings(b) (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"a/9=t2", "b/1=t3", "b/2=t1"}, keys("")); d != "" {
		t.Errorf("ListBindings(every node) (-want +got):\n%s", d)
	}
	if got := keys("none"); len(got) != 0 {
		t.Errorf("ListBindings(none) = %v, want no records", got)
	}
}

func testRefusesBadInput(t *testing.T, s remote.BindingStore) {
	bad := []struct {
		field string
		r     *remote.BindingRecord
	}{
		{"node", record("", "k", "t")},
		{"key", record("n", strings.Repeat("k", 257), "t")},
		{"task_id", record("n", "k", "")},
		{"agent_url", func() *remote.BindingRecord { r := record("n", "k", "t"); r.AgentURL = "relative"; return r }()},
	}
	for _, c := range bad {
		var ve *sortie.ValidationError
		if err := s.PutBinding(ctx(t), c.r); !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("PutBinding(bad %s) = %v, want a ValidationError for %s", c.field, err, c.field)
		}
	}
	var ve *sortie.ValidationError
	if _, err := s.GetBinding(ctx(t), "n", ""); !errors.As(err, &ve) || ve.Field != "key" {
		t.Errorf("GetBinding(empty key) = %v, want a ValidationError for key", err)
	}
	if recs, err := s.ListBindings(ctx(t), ""); err != nil || len(recs) != 0 {
		t.Errorf("ListBindings after refused puts = %v, %v; want none stored", recs, err)
	}
}

func testConcurrentKeys(t *testing.T, s remote.BindingStore) {
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- s.PutBinding(ctx(t), record("n", fmt.Sprintf("k%02d", i), fmt.Sprintf("t%d", i)))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent PutBinding = %v", err)
		}
	}
	if recs, err := s.ListBindings(ctx(t), "n"); err != nil || len(recs) != n {
		t.Errorf("ListBindings after %d concurrent puts = %d records, %v", n, len(recs), err)
	}
}
