package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/probe"
)

// stepLog returns "ATTEMPT KIND NAME" for the step events and the agent's
// own event of kind ran (each time a step's work runs), in order.
func stepLog(t *testing.T, events []sortie.Event, ran string) []string {
	t.Helper()
	var out []string
	for _, e := range events {
		if !strings.HasPrefix(e.Kind, "step.") && e.Kind != ran {
			continue
		}
		var d struct {
			Name string `json:"name"`
			Step int    `json:"step"`
		}
		_ = json.Unmarshal(e.Data, &d)
		if d.Name == "" {
			d.Name = fmt.Sprintf("step-%d", d.Step)
		}
		out = append(out, fmt.Sprintf("%d %s %s", e.Attempt, e.Kind, d.Name))
	}
	return out
}

// A probe with three durable steps crashes (its warm worker process exits)
// after step 2 on attempt 1: attempt 2 runs only step 3 and replays the
// first two, and their results are attempt 1's.
func TestCrashedRunReplaysItsSteps(t *testing.T) {
	c := newCLI(t)
	r := c.run("run", "probe", "--json", "--policy", fast, "--var", "events=0", "--var", "steps=3",
		"--var", "crash_after_step=2", "--var", "crash_attempts=1")
	events, final := jsonLines(t, r.stdout)
	if r.code != 0 || final == nil || final.Attempt != 2 {
		t.Fatalf("sortie run probe with a crash after step 2: exit %d, final %+v; want completed on attempt 2\n%s", r.code, final, r.stderr)
	}
	var out struct{ Steps []probe.StepResult }
	if err := json.Unmarshal(final.Result, &out); err != nil {
		t.Fatalf("result %s: %v", final.Result, err)
	}
	if diff := cmp.Diff([]probe.StepResult{{Step: 1, Attempt: 1}, {Step: 2, Attempt: 1}, {Step: 3, Attempt: 2}}, out.Steps); diff != "" {
		t.Errorf("step results (-want +got):\n%s", diff)
	}
	want := []string{
		"1 step.started step-1", "1 probe.step step-1", "1 step.completed step-1",
		"1 step.started step-2", "1 probe.step step-2", "1 step.completed step-2",
		"2 step.replayed step-1", "2 step.replayed step-2",
		"2 step.started step-3", "2 probe.step step-3", "2 step.completed step-3",
	}
	if diff := cmp.Diff(want, stepLog(t, events, probe.EventStepRan)); diff != "" {
		t.Errorf("step events (-want +got): each step's function ran once\n%s", diff)
	}
	got := c.get(final.ID)
	var steps []string
	for _, st := range got.Steps {
		steps = append(steps, fmt.Sprintf("%s by %d: %s", st.Name, st.Attempt, st.Result))
	}
	wantSteps := []string{`step-1 by 1: {"step":1,"attempt":1}`, `step-2 by 1: {"step":2,"attempt":1}`, `step-3 by 2: {"step":3,"attempt":2}`}
	if diff := cmp.Diff(wantSteps, steps); diff != "" {
		t.Errorf("sortie get --json steps (-want +got):\n%s", diff)
	}
	if text := c.run("get", string(final.ID)); !strings.Contains(text.stdout, "step step-3") {
		t.Errorf("sortie get prints no step lines:\n%s", text.stdout)
	}
}

// A resumed run replays the steps its interrupted attempt completed.
func TestResumeReplaysSteps(t *testing.T) {
	c := newCLI(t)
	id := c.submit("probe", "--var", "events=0", "--var", "steps=2", "--var", `interrupt="input-required"`)
	waitFor(t, "input-required", waitLong, func() bool { return c.get(id).State == sortie.StateInputRequired })
	r := c.run("resume", string(id), "--input", `"go on"`, "--json")
	_, final := jsonLines(t, r.stdout)
	if r.code != 0 || final == nil || final.Attempt != 2 {
		t.Fatalf("sortie resume: exit %d final %+v; want completed on attempt 2\n%s", r.code, final, r.stderr)
	}
	want := []string{
		"1 step.started step-1", "1 probe.step step-1", "1 step.completed step-1",
		"1 step.started step-2", "1 probe.step step-2", "1 step.completed step-2",
		"2 step.replayed step-1", "2 step.replayed step-2",
	}
	if diff := cmp.Diff(want, stepLog(t, events(t, c.store(), id), probe.EventStepRan)); diff != "" {
		t.Errorf("step events (-want +got):\n%s", diff)
	}
}

// The Python exec worker, warm (sortie.session/v1, as examples/runtimes.json
// runs it) and one process per attempt: it crashes after its second step
// on attempt 1, and attempt 2 runs only the third, replaying the others
// from its invocation.
func TestPythonWorkerRetrySkipsFinishedSteps(t *testing.T) {
	abs, err := filepath.Abs("../../examples/wordfreq-py/worker.py")
	if err != nil {
		t.Fatal(err)
	}
	oneShot := filepath.Join(t.TempDir(), "runtimes.json")
	spec := fmt.Sprintf(`{"version":"sortie.runtimes/v1","runtimes":{"wordfreq-py":{"command":["python3",%q]}}}`, abs)
	if err := os.WriteFile(oneShot, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, runtimes := range map[string]string{"session": "examples/runtimes.json", "one process per attempt": oneShot} {
		t.Run(name, func(t *testing.T) {
			c := newCLI(t)
			r := c.run("run", "examples/wordfreq-py", "--runtimes", runtimes, "--json", "--policy", fast,
				"--var", `text="the light, the light, the prism"`, "--var", "crash_after_step=2", "--var", "crash_attempts=1")
			events, final := jsonLines(t, r.stdout)
			if r.code != 0 || final == nil || final.Attempt != 2 || !strings.Contains(string(final.Result), `["light",2]`) {
				t.Fatalf("sortie run examples/wordfreq-py crashing after step 2: exit %d, final %+v; want completed on attempt 2\n%s", r.code, final, r.stderr)
			}
			want := []string{
				"1 step.started count", "1 wordfreq.step count", "1 step.completed count",
				"1 step.started rank", "1 wordfreq.step rank", "1 step.completed rank",
				"2 step.replayed count", "2 step.replayed rank",
				"2 step.started summarise", "2 wordfreq.step summarise", "2 step.completed summarise",
			}
			if diff := cmp.Diff(want, stepLog(t, events, "wordfreq.step")); diff != "" {
				t.Errorf("step events (-want +got): each step's work ran once\n%s", diff)
			}
		})
	}
}
