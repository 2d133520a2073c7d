package triggers_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/internal/rig"
)

// newRouter returns a router of testdata/rules.json to a fresh rig.
func newRouter(t *testing.T) (*triggers.Router, *rig.Rig) {
	t.Helper()
	rules, err := triggers.LoadRules(filepath.Join("testdata", "rules.json"))
	if err != nil {
		t.Fatalf("LoadRules(testdata/rules.json) = %v", err)
	}
	r := rig.New(t)
	return triggers.NewRouter(rules, r.Engine, &triggers.Options{Logger: r.Logger()}), r
}

func readSample(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sqsBatch builds an SQS batch from the sample's first record: one record
// per body, with message IDs from ids.
func sqsBatch(t *testing.T, ids []string, bodies []any) json.RawMessage {
	t.Helper()
	return sqsBatchWith(t, ids, bodies, nil)
}

// sqsBatchWith is sqsBatch with edit (when not nil) changing record i.
func sqsBatchWith(t *testing.T, ids []string, bodies []any, edit func(i int, rec map[string]any)) json.RawMessage {
	t.Helper()
	var sample struct {
		Records []map[string]any `json:"Records"`
	}
	if err := json.Unmarshal(readSample(t, "aws/sqs-event.json"), &sample); err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	for i, id := range ids {
		rec := map[string]any{}
		for k, v := range sample.Records[0] {
			rec[k] = v
		}
		rec["messageId"], rec["body"] = id, bodies[i]
		if edit != nil {
			edit(i, rec)
		}
		recs = append(recs, rec)
	}
	b, err := json.Marshal(map[string]any{"Records": recs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkResult waits for run id and compares its result with want (JSON).
func checkResult(t *testing.T, r *rig.Rig, id sortie.RunID, want string) *sortie.Run {
	t.Helper()
	run := r.Wait(t, id)
	if run.State != sortie.StateCompleted {
		t.Fatalf("run %s = %s (%v), want completed", id, run.State, run.Error)
	}
	var got, w any
	if err := json.Unmarshal(run.Result, &got); err != nil {
		t.Fatalf("run %s result %s: %v", id, run.Result, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(w, got); d != "" {
		t.Errorf("run %s result (-want +got):\n%s", id, d)
	}
	return run
}
