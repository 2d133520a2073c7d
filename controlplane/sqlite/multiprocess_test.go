package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/sqlite"
)

// childEnv marks the test binary re-executed as the second process.
const childEnv = "SORTIE_SQLITE_TEST_CHILD"

// task is what the parent hands the child on stdin: the runs to claim and
// the claimed attempt to append events to.
type task struct {
	Path     string       `json:"path"`
	Claims   []attemptRef `json:"claims"`
	Events   attemptRef   `json:"events"`
	NumEvent int          `json:"num_events"`
}

type attemptRef struct {
	RunID    sortie.RunID `json:"run_id"`
	LaunchID string       `json:"launch_id"`
}

// report is what the child prints on stdout when done.
type report struct {
	Won []sortie.RunID `json:"won"`
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := child(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child opens the file named in the task, says "ready", then claims and
// appends as the task says, racing the parent.
func child(in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("read task: %w", err)
	}
	var tk task
	if err := json.Unmarshal(line, &tk); err != nil {
		return fmt.Errorf("decode task: %w", err)
	}
	cp, err := sqlite.Open(tk.Path, nil)
	if err != nil {
		return err
	}
	defer cp.Close()
	fmt.Fprintln(out, "ready")
	if _, err := r.ReadBytes('\n'); err != nil { // "go"
		return fmt.Errorf("read go: %w", err)
	}
	slices.Reverse(tk.Claims) // meet the parent in the middle, so both win some
	rep, err := race(cp, tk, "child")
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(rep)
}

// race claims every run of the task as owner and appends the task's events.
func race(cp sortie.ControlPlane, tk task, owner string) (report, error) {
	var rep report
	ctx := context.Background()
	for i, c := range tk.Claims {
		_, err := cp.Claim(ctx, sortie.Claim{RunID: c.RunID, Attempt: 1, LaunchID: c.LaunchID, Owner: owner, NowMs: controlplanetest.T0 + 5})
		switch {
		case err == nil:
			rep.Won = append(rep.Won, c.RunID)
		case !errors.Is(err, sortie.ErrConflict):
			return rep, fmt.Errorf("%s: Claim(%s) = %w", owner, c.RunID, err)
		}
		if i < tk.NumEvent {
			ev := sortie.Event{Kind: "progress", Text: owner + "-" + strconv.Itoa(i)}
			if _, err := cp.AppendEvents(ctx, sortie.Append{RunID: tk.Events.RunID, Attempt: 1, LaunchID: tk.Events.LaunchID,
				Events: []sortie.Event{ev}, NowMs: controlplanetest.T0 + 6}); err != nil {
				return rep, fmt.Errorf("%s: AppendEvents = %w", owner, err)
			}
		}
	}
	return rep, nil
}

// TestTwoProcessesShareOneFile re-executes the test binary as a second
// process on the same file: both claim the same 100 attempts (from opposite
// ends) and append to one attempt at once. Every attempt must be claimed exactly once, by the
// owner the stored run names, and the events must be numbered 1..N once.
func TestTwoProcessesShareOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	cp := mustOpen(t, path, nil)
	const numRuns, numEvents = 100, 60
	tk := task{Path: path, NumEvent: numEvents}
	for i := range numRuns + 1 {
		now := controlplanetest.T0 + int64(i)
		run, _, err := cp.Reserve(t.Context(), &sortie.Reservation{Run: controlplanetest.NewRun(now), NowMs: now})
		if err != nil {
			t.Fatalf("Reserve = %v", err)
		}
		ref := attemptRef{RunID: run.ID, LaunchID: sortie.NewLaunchID()}
		if _, err := cp.RecordLaunch(t.Context(), sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: ref.LaunchID, NowMs: now}); err != nil {
			t.Fatalf("RecordLaunch = %v", err)
		}
		tk.Claims = append(tk.Claims, ref)
	}
	tk.Events, tk.Claims = tk.Claims[numRuns], tk.Claims[:numRuns]
	if _, err := cp.Claim(t.Context(), sortie.Claim{RunID: tk.Events.RunID, Attempt: 1, LaunchID: tk.Events.LaunchID,
		Owner: "both", NowMs: controlplanetest.T0 + 1}); err != nil {
		t.Fatalf("Claim(events run) = %v", err)
	}
	childRep, parentRep := runChild(t, cp, tk)

	owner := map[sortie.RunID]string{}
	for name, rep := range map[string]report{"child": childRep, "parent": parentRep} {
		for _, id := range rep.Won {
			if owner[id] != "" {
				t.Errorf("run %s claimed by both processes, want exactly one winner", id)
			}
			owner[id] = name
		}
	}
	for _, c := range tk.Claims {
		run, err := cp.Get(t.Context(), c.RunID)
		if err != nil || owner[c.RunID] == "" || run.Current().Owner != owner[c.RunID] {
			t.Errorf("run %s: stored owner %q, claim won by %q (err %v), want one winner that the run names", c.RunID, ownerOf(run), owner[c.RunID], err)
		}
	}
	checkEvents(t, cp, tk.Events.RunID, numEvents)
	t.Logf("claims won: parent %d, child %d", len(parentRep.Won), len(childRep.Won))
}

func ownerOf(r *sortie.Run) string {
	if r == nil || r.Current() == nil {
		return ""
	}
	return r.Current().Owner
}

// runChild starts the second process, races it and returns both reports.
func runChild(t *testing.T, cp sortie.ControlPlane, tk task) (child, parent report) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{childEnv + "=1"} // nothing of the host's environment
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", os.Args[0], err)
	}
	defer cmd.Process.Kill()
	out := bufio.NewScanner(stdout)
	line, _ := json.Marshal(tk)
	fmt.Fprintf(stdin, "%s\n", line)
	if !out.Scan() || out.Text() != "ready" {
		t.Fatalf("child said %q, want ready; stderr:\n%s", out.Text(), stderr.String())
	}
	fmt.Fprintln(stdin, "go")
	parent, err = race(cp, tk, "parent")
	if err != nil {
		t.Errorf("parent: %v", err)
	}
	if !out.Scan() || json.Unmarshal(out.Bytes(), &child) != nil {
		t.Fatalf("child report %q is not a report; stderr:\n%s", out.Text(), stderr.String())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child = %v; stderr:\n%s", err, stderr.String())
	}
	return child, parent
}

// checkEvents checks that each process's n events were stored once, with
// seqs 1..2n.
func checkEvents(t *testing.T, cp sortie.ControlPlane, id sortie.RunID, n int) {
	t.Helper()
	evs, err := cp.Events(t.Context(), id, sortie.Cursor{}, 1000)
	if err != nil {
		t.Fatalf("Events = %v", err)
	}
	var seqs, wantSeqs []int64
	texts := map[string]bool{}
	for i, e := range evs {
		seqs, wantSeqs = append(seqs, e.Seq), append(wantSeqs, int64(i+1))
		texts[e.Text] = true
	}
	if diff := cmp.Diff(wantSeqs, seqs); diff != "" || len(evs) != 2*n {
		t.Errorf("Events from two processes: %d events, seqs (-want 1..N +got):\n%s", len(evs), diff)
	}
	for i := range n {
		for _, who := range []string{"parent", "child"} {
			if text := who + "-" + strconv.Itoa(i); !texts[text] {
				t.Errorf("event %q missing", text)
			}
		}
	}
}
