package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// queryPlan returns SQLite's plan for query, one detail a line.
func queryPlan(t *testing.T, c *ControlPlane, query string, args ...any) string {
	t.Helper()
	rows, err := c.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN %s = %v", query, err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatalf("scan plan: %v", err)
		}
		lines = append(lines, detail)
	}
	return strings.Join(lines, "\n")
}

// TestQueriesUseIndexes proves Expired, Events, PendingPushConfigs and List read through their indexes
// in index order, without a scan of the runs table or a sort.
func TestQueriesUseIndexes(t *testing.T) {
	c, err := Open(filepath.Join(t.TempDir(), "plan.db"), nil)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer c.Close()
	tok := &controlplane.PageToken{CreatedMs: 5, ID: sortie.NewRunID(c.now())}
	type plan struct {
		name, index, query string
		args               []any
	}
	list := func(name, index string, q sortie.ListQuery, tok *controlplane.PageToken) plan {
		query, args := listQuery(q, tok, 10)
		return plan{name, "INDEX " + index, query, args}
	}
	for _, tc := range []plan{
		{"Expired", "INDEX runs_lease", expiredQuery, []any{1, 10}},
		{"Ended", "INDEX runs_ended", endedQuery, []any{1, 10}},
		{"Events", "PRIMARY KEY (run_id=? AND (attempt,first_seq)>(?,?))", eventsQuery, []any{"r", 1, 5, 1, 105, 10}},
		{"PendingPushConfigs", "INDEX push_pending", pendingQuery, []any{1, -1, "", "", 10}},
		{"PendingPushConfigs(page 2)", "INDEX push_pending", pendingQuery, []any{100, 5, string(tok.ID), "hook", 10}},
		list("List", "runs_created", sortie.ListQuery{}, nil),
		list("List(page 2)", "runs_created", sortie.ListQuery{}, tok),
		list("List(context)", "runs_context", sortie.ListQuery{ContextID: "c"}, nil),
		list("List(state, page 2)", "runs_state", sortie.ListQuery{State: sortie.StateWorking}, tok),
		list("List(agent)", "runs_agent", sortie.ListQuery{Agent: "probe"}, nil),
	} {
		got := queryPlan(t, c, tc.query, tc.args...)
		if !strings.Contains(got, "USING "+tc.index) || strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("%s: query plan\n%s\nwant a search of index %s without a temporary sort", tc.name, got, tc.index)
		}
	}
}
