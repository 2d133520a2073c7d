package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/remote"
	"github.com/sortie-run/sortie/remote/remotetest"
	"github.com/sortie-run/sortie/remote/sqlitebindings"
)

// callerEnv names the environment variable that makes the test binary a
// caller process: its value is a callerTask.
const callerEnv = "SORTIE_REMOTE_TEST_CALLER"

// callerTask is what a caller process calls.
type callerTask struct {
	URL  string `json:"url"`
	DB   string `json:"db"`
	Key  string `json:"key"`
	Data string `json:"data"`
}

func TestMain(m *testing.M) {
	if v := os.Getenv(callerEnv); v != "" {
		if err := caller(v); err != nil {
			fmt.Fprintln(os.Stderr, "caller:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// callerNode is the node a caller process (and its restarted self) uses.
func callerNode(url string, store remote.BindingStore) *remote.Node {
	return &remote.Node{Name: "caller", Transport: httpTransport(), Skill: "probe", AgentURL: url, Bindings: store}
}

// caller makes one keyed call through a SQLite binding store and prints
// its result; the test kills it before it returns.
func caller(v string) error {
	var tk callerTask
	if err := json.Unmarshal([]byte(v), &tk); err != nil {
		return err
	}
	store, err := sqlitebindings.Open(tk.DB, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	res, err := callerNode(tk.URL, store).Call(context.Background(), remote.Message{Data: json.RawMessage(tk.Data)},
		&remote.CallOptions{Key: tk.Key})
	if err != nil {
		return err
	}
	fmt.Println(string(res.Result))
	return nil
}

// crashedCaller starts a caller process on data, waits until it recorded
// the remote run it started and that run is working, kills it, and
// returns the binding store (reopened, as a restarted caller would) and
// the run.
func crashedCaller(t *testing.T, h *remotetest.Host, url, data string) (*sqlitebindings.Store, *sortie.Run) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "bindings.db")
	tk, _ := json.Marshal(callerTask{URL: url, DB: db, Key: "job-1", Data: data})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{callerEnv + "=" + string(tk)}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the caller process: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	run := workingRun(t, h.Engine)
	store, err := sqlitebindings.Open(db, nil)
	if err != nil {
		t.Fatalf("open the caller's bindings: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	testwait.UntilReport(t, "the caller's binding record", 10*time.Second, func() (bool, string) {
		rec, err := store.GetBinding(context.Background(), "caller", "job-1")
		return err == nil && rec.TaskID == run.ID.String(), fmt.Sprintf("%+v, %v; caller stderr: %s", rec, err, stderr.String())
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill the caller: %v", err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatalf("the caller exited normally; want it killed mid-call")
	}
	return store, run
}

func TestACallerRestartedMidCallCancelsTheTaskItStarted(t *testing.T) {
	h := remotetest.New(t, nil)
	url := serveHost(t, h, nil)
	store, run := crashedCaller(t, h, url, `{"events":0,"until_cancelled":true}`)
	got, err := h.Engine.Get(testCtx(t), run.ID)
	if err != nil {
		t.Fatalf("Get(%s) = %v", run.ID, err)
	}
	if got.State != sortie.StateWorking {
		t.Fatalf("remote run after its caller was killed is %s, want still working", got.State)
	}

	restarted := callerNode(url, store)
	recs, err := store.ListBindings(testCtx(t), "caller")
	if err != nil || len(recs) != 1 {
		t.Fatalf("ListBindings after the restart = %+v, %v; want the one call", recs, err)
	}
	if err := restarted.CancelBound(testCtx(t), recs[0].Key); err != nil {
		t.Fatalf("CancelBound(%s) = %v", recs[0].Key, err)
	}
	if got := h.Wait(t, run.ID); got.State != sortie.StateCancelled {
		t.Errorf("remote run after the restarted caller cancelled it is %s, want cancelled", got.State)
	}
	if _, err := store.GetBinding(testCtx(t), "caller", "job-1"); !errors.Is(err, remote.ErrBindingNotFound) {
		t.Errorf("GetBinding after CancelBound = %v, want ErrBindingNotFound", err)
	}
}

func TestACallerRestartedMidCallGetsTheResultOfTheTaskItStarted(t *testing.T) {
	h := remotetest.New(t, nil)
	url := serveHost(t, h, nil)
	store, run := crashedCaller(t, h, url, `{"events":0,"sleep_ms":1500,"output":{"done":true}}`)

	restarted := callerNode(url, store)
	rec := &recorder{}
	restarted.Observer = rec
	res, err := restarted.Call(testCtx(t), remote.Message{Data: json.RawMessage(`{"events":0}`)}, &remote.CallOptions{Key: "job-1"})
	if err != nil {
		t.Fatalf("Call with the key of the killed call = %v, want the first task's result", err)
	}
	if res.TaskID != run.ID.String() || string(res.Result) != `{"done":true}` {
		t.Errorf("Call after the restart = task %s result %s, want task %s result {\"done\":true}", res.TaskID, res.Result, run.ID)
	}
	if o := rec.last(); o.Kind != remote.RemoteCallSuccess || !o.Resumed {
		t.Errorf("last observation %+v, want a resumed remote_call_success", o)
	}
	if page, _ := h.Engine.List(testCtx(t), sortie.ListQuery{}); len(page.Runs) != 1 {
		t.Errorf("runs on the host = %d, want 1: the restarted caller sent nothing new", len(page.Runs))
	}
	if _, err := store.GetBinding(testCtx(t), "caller", "job-1"); !errors.Is(err, remote.ErrBindingNotFound) {
		t.Errorf("GetBinding after the task completed = %v, want ErrBindingNotFound", err)
	}
}
