package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `sortie delete` removes a completed run with its 5 MB variable and
// result: the state then holds no object under runs/RUN_ID/ and `sortie
// get` answers not found (exit 2); an interrupted run named with it is
// refused naming its state and stays; a --retention that is not a
// duration is a usage error.
func TestDeleteCLI(t *testing.T) {
	c := newCLI(t)
	done, _ := runLarge(t, c)
	objects := filepath.Join(c.state, "payloads", "runs", string(done.ID))
	if entries, err := os.ReadDir(objects); err != nil || len(entries) == 0 {
		t.Fatalf("%s holds %d entries (%v), want the run's objects", objects, len(entries), err)
	}
	w := c.run("run", "probe", "--var", `interrupt="input-required"`, "--json")
	_, waiting := jsonLines(t, w.stdout)
	if w.code != 4 || waiting == nil {
		t.Fatalf("sortie run probe --var interrupt: exit %d, want 4 (interrupted): %.500s", w.code, w.stderr)
	}

	d := c.run("delete", string(done.ID), string(waiting.ID))
	if d.code != 2 || !strings.Contains(d.stdout, "run "+string(done.ID)+" deleted") ||
		!strings.Contains(d.stderr, "input-required") || !strings.Contains(d.stderr, "cancel it first") {
		t.Fatalf("sortie delete DONE WAITING: exit %d, stdout %q, stderr %q; want exit 2, the completed run deleted and the interrupted one refused naming its state",
			d.code, d.stdout, d.stderr)
	}
	if entries, err := os.ReadDir(objects); err == nil && len(entries) > 0 {
		t.Errorf("after sortie delete, %s still holds %d entries", objects, len(entries))
	}
	if g := c.run("get", string(done.ID)); g.code != 2 || !strings.Contains(g.stderr, "not found") {
		t.Errorf("sortie get DELETED: exit %d, stderr %q; want 2 and not found", g.code, g.stderr)
	}
	if got := c.get(waiting.ID); got.State != "input-required" {
		t.Errorf("the refused run is %s, want it kept input-required", got.State)
	}
	if u := c.run("list", "--retention", "a-month"); u.code != 2 || !strings.Contains(u.stderr, "--retention") {
		t.Errorf("sortie list --retention a-month: exit %d, stderr %q; want 2 naming --retention", u.code, u.stderr)
	}
}
