package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/testwait"
)

// sortieBin is the sortie binary built once for these tests: the commands
// run as separate processes, as a user runs them.
var sortieBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sortie-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sortieBin = filepath.Join(dir, "sortie")
	if out, err := exec.Command("go", "build", "-o", sortieBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/sortie: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cli runs sortie commands against one state directory.
type cli struct {
	t     *testing.T
	state string
}

func newCLI(t *testing.T) *cli {
	c := &cli{t: t, state: t.TempDir()}
	// Runs started by submit or trigger go on after the command exits, as
	// they do for a user; the state directory is removed once the workers
	// writing to it have ended (cleanups run last-registered first).
	t.Cleanup(func() { endWorkers(t, c.state) })
	return c
}

// endWorkers waits up to a minute for the processes started with state dir
// as their SORTIE_STATE_DIR or on their command line to exit; those left
// then are killed and the test fails (a test must not leave a run going).
func endWorkers(t *testing.T, dir string) {
	defer func() {
		for _, pid := range workersOf(dir) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	testwait.UntilReport(t, "the workers using the state directory to exit", time.Minute, func() (bool, string) {
		pids := workersOf(dir)
		return len(pids) == 0, fmt.Sprintf("pids %v", pids)
	})
}

// workersOf lists the processes whose environment or command line names
// dir (all processes are readable: the tests run as the same user).
func workersOf(dir string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, _ := os.ReadFile(p + "/environ")
		cmd, _ := os.ReadFile(p + "/cmdline")
		if bytes.Contains(env, []byte("SORTIE_STATE_DIR="+dir+"\x00")) || bytes.Contains(cmd, []byte(dir)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

type result struct {
	code           int
	stdout, stderr string
}

// cmd is sortie with args, on the cli's --state-dir unless args talk to
// --host (which refuses host settings).
func (c *cli) cmd(args ...string) *exec.Cmd {
	if !slices.Contains(args, "--host") {
		args = append([]string{"--state-dir", c.state}, args...)
	}
	cmd := exec.Command(sortieBin, args...)
	cmd.Dir = "../.." // the repository root, as in the README
	cmd.Env = append(os.Environ(), "SORTIE_STATE_DIR=", "SORTIE_RUNTIMES=", "SORTIE_CONFIG_REFS=")
	return cmd
}

func (c *cli) run(args ...string) result {
	c.t.Helper()
	cmd := c.cmd(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("sortie %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

// get reads a run from a fresh process.
func (c *cli) get(id sortie.RunID) *sortie.Run {
	c.t.Helper()
	r := c.run("get", string(id), "--json")
	if r.code != 0 {
		c.t.Fatalf("sortie get %s --json: exit %d: %s", id, r.code, r.stderr)
	}
	var run sortie.Run
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
		c.t.Fatalf("sortie get --json printed %q: %v", r.stdout, err)
	}
	return &run
}

func (c *cli) submit(args ...string) sortie.RunID {
	c.t.Helper()
	r := c.run(append([]string{"submit"}, args...)...)
	if r.code != 0 {
		c.t.Fatalf("sortie submit %v: exit %d: %s", args, r.code, r.stderr)
	}
	return sortie.RunID(strings.TrimSpace(r.stdout))
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	testwait.Until(t, what, d, cond)
}

// jsonLines decodes the --json output of run or follow.
func jsonLines(t *testing.T, out string) (events []sortie.Event, final *sortie.Run) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var item struct {
			Event *sortie.Event `json:"event"`
			Run   *sortie.Run   `json:"run"`
		}
		if err := json.Unmarshal([]byte(line), &item); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		if item.Event != nil {
			events = append(events, *item.Event)
		}
		if item.Run != nil {
			final = item.Run
		}
	}
	return events, final
}

// checkContiguous fails unless each attempt's events are numbered 1..n.
func checkContiguous(t *testing.T, events []sortie.Event) map[int]int64 {
	t.Helper()
	last := map[int]int64{}
	for _, e := range events {
		if e.Seq != last[e.Attempt]+1 {
			t.Fatalf("event %s follows seq %d: events must have no gaps", e.Cursor(), last[e.Attempt])
		}
		last[e.Attempt] = e.Seq
	}
	return last
}
