package main

import (
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
)

// `sortie delete` removes a completed run with its 5 MB variable and
// result: the state then holds no directory runs/RUN_ID/ and `sortie get`
// answers not found (exit 2); a run whose crashed attempt logged is
// deleted with its attempts' logs; an interrupted run named with them is
// refused naming its state and stays. Only serve and reconcile take a
// retention: the other commands ignore SORTIE_RETENTION and refuse
// --retention.
func TestDeleteCLI(t *testing.T) {
	c := newCLI(t)
	done, _ := runLarge(t, c)
	objects := filepath.Join(c.state, "payloads", "runs", string(done.ID))
	if entries, err := os.ReadDir(objects); err != nil || len(entries) == 0 {
		t.Fatalf("%s holds %d entries (%v), want the run's objects", objects, len(entries), err)
	}
	crashed := c.run("run", "probe", "--var", "crash_attempts=1", "--json")
	_, retried := jsonLines(t, crashed.stdout)
	logs := filepath.Join(c.state, "logs", string(retried.ID)+"-*.log")
	if got, _ := filepath.Glob(logs); crashed.code != 0 || len(got) == 0 {
		t.Fatalf("sortie run probe --var crash_attempts=1: exit %d, logs %q; want completed with its crashed attempt's log: %.500s", crashed.code, got, crashed.stderr)
	}
	w := c.run("run", "probe", "--var", `interrupt="input-required"`, "--json")
	_, waiting := jsonLines(t, w.stdout)
	if w.code != 4 || waiting == nil {
		t.Fatalf("sortie run probe --var interrupt: exit %d, want 4 (interrupted): %.500s", w.code, w.stderr)
	}

	d := c.run("delete", string(done.ID), string(waiting.ID), string(retried.ID))
	if d.code != 2 || !strings.Contains(d.stdout, "run "+string(done.ID)+" deleted") || !strings.Contains(d.stdout, "run "+string(retried.ID)+" deleted") ||
		!strings.Contains(d.stderr, "input-required") || !strings.Contains(d.stderr, "cancel it first") {
		t.Fatalf("sortie delete DONE WAITING: exit %d, stdout %q, stderr %q; want exit 2, the completed run deleted and the interrupted one refused naming its state",
			d.code, d.stdout, d.stderr)
	}
	if _, err := os.Stat(objects); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after sortie delete, Stat(%s) = %v, want the run's directory removed", objects, err)
	}
	if got, _ := filepath.Glob(logs); len(got) != 0 {
		t.Errorf("after sortie delete, the run's logs are left: %q", got)
	}
	if g := c.run("get", string(done.ID)); g.code != 2 || !strings.Contains(g.stderr, "not found") {
		t.Errorf("sortie get DELETED: exit %d, stderr %q; want 2 and not found", g.code, g.stderr)
	}
	if got := c.get(waiting.ID); got.State != "input-required" {
		t.Errorf("the refused run is %s, want it kept input-required", got.State)
	}
	if u := c.run("list", "--retention", "720h"); u.code != 2 || !strings.Contains(u.stderr, "--retention") || !strings.Contains(u.stderr, "serve and reconcile") {
		t.Errorf("sortie list --retention 720h: exit %d, stderr %q; want 2 naming --retention and the commands taking it", u.code, u.stderr)
	}
	for _, bad := range []string{"30d", "5s"} {
		cmd := c.cmd("list")
		cmd.Env = append(cmd.Env, "SORTIE_RETENTION="+bad)
		if r := runCmd(t, cmd); r.code != 0 {
			t.Errorf("SORTIE_RETENTION=%s sortie list: exit %d, stderr %q; want it ignored", bad, r.code, r.stderr)
		}
		cmd = c.cmd("reconcile", "--once")
		cmd.Env = append(cmd.Env, "SORTIE_RETENTION="+bad)
		if r := runCmd(t, cmd); r.code != 2 || !strings.Contains(r.stderr, "--retention") || !strings.Contains(r.stderr, "SORTIE_RETENTION") {
			t.Errorf("SORTIE_RETENTION=%s sortie reconcile --once: exit %d, stderr %q; want 2 naming --retention and SORTIE_RETENTION", bad, r.code, r.stderr)
		}
	}

}

// `sortie reconcile --once --retention 1m` deletes a run that ended more
// than a minute ago (its updated_ms moved back two minutes in the SQLite
// state) and keeps a recent one, as each pass of the reconciler does.
func TestReconcileOnceExpiresCLI(t *testing.T) {
	c := newCLI(t)
	var ids []sortie.RunID
	for range 2 {
		r := c.run("run", "probe", "--var", "events=0", "--json")
		_, final := jsonLines(t, r.stdout)
		if r.code != 0 || final == nil {
			t.Fatalf("sortie run probe: exit %d: %.500s", r.code, r.stderr)
		}
		ids = append(ids, final.ID)
	}
	old, recent := ids[0], ids[1]
	db, err := sql.Open("sqlite", filepath.Join(c.state, host.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(t.Context(), `UPDATE runs SET updated_ms = updated_ms - 120000 WHERE id = ?`, string(old))
	db.Close()
	if err != nil {
		t.Fatalf("move run %s back two minutes: %v", old, err)
	}
	r := c.run("reconcile", "--once", "--retention", "1m")
	if r.code != 0 || !strings.Contains(r.stdout, "deleted 1 run(s) ended over 1m0s ago") {
		t.Fatalf("sortie reconcile --once --retention 1m: exit %d, stdout %q, stderr %q; want the old run deleted", r.code, r.stdout, r.stderr)
	}
	if g := c.run("get", string(old)); g.code != 2 || !strings.Contains(g.stderr, "not found") {
		t.Errorf("sortie get EXPIRED: exit %d, stderr %q; want 2 and not found", g.code, g.stderr)
	}
	if got := c.get(recent); got.State != sortie.StateCompleted {
		t.Errorf("the recent run is %s, want it kept completed", got.State)
	}
}

// delete of several IDs, some unknown or malformed, prints one error line
// per bad ID, each with the "sortie: " prefix.
func TestDeleteEachErrorPrefixed(t *testing.T) {
	c := newCLI(t)
	c.submit("probe", "--var", "events=1") // a state directory to delete from
	r := c.run("delete", "01JZZZZZZZZZZZZZZZZZZZZZZZ", "nope", "01JZZZZZZZZZZZZZZZZZZZZZZY")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != 2 || len(lines) != 3 {
		t.Fatalf("sortie delete A nope B: exit %d, stderr %q; want exit 2 and three error lines", r.code, r.stderr)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "sortie: delete ") {
			t.Errorf("sortie delete A nope B: line %q lacks the sortie: prefix", l)
		}
	}
}
