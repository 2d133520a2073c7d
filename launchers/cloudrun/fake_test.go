package cloudrun_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	"cloud.google.com/go/run/apiv2/runpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
)

// testJob is the Job the fake Admin API knows.
const testJob = "projects/test-project/locations/europe-west1/jobs/probe"

// cancelGrace is how long the fake waits after SIGTERM before SIGKILL.
const cancelGrace = 5 * time.Second

// fakeRun is a test double of the Cloud Run Admin API (no emulator
// exists): RunJob starts the real sortie-cloudrun binary with the
// request's overrides, as Cloud Run starts the Job's container;
// GetExecution reports the process's state with the Completed condition
// and its execution reason, as Cloud Run does; CancelExecution sends it
// SIGTERM, then SIGKILL after cancelGrace. The faults of faults_test.go
// hold RunJob calls, hold containers pending, and cancel executions behind
// Sortie's back.
type fakeRun struct {
	runpb.UnimplementedJobsServer
	runpb.UnimplementedExecutionsServer
	longrunningpb.UnimplementedOperationsServer

	env  []string // the container's environment, as the Job defines it
	addr string

	mu      sync.Mutex
	reqs    []*runpb.RunJobRequest
	execs   map[string]*fakeExec
	cancels int           // CancelExecution calls
	runGate chan struct{} // non-nil: RunJob calls wait for it to close
	pending bool          // containers of new executions wait for release
}

type fakeExec struct {
	cmd       *exec.Cmd
	out       bytes.Buffer
	started   bool // the container's process started
	done      chan struct{}
	exit      int
	cancelled bool
}

// startFake serves a fakeRun on a loopback port until tb ends; its
// containers report to the SQLite file sqlitePath.
func startFake(tb testing.TB, sqlitePath string) *fakeRun {
	return startFakeEnv(tb, []string{fncloudrun.EnvSQLitePath + "=" + sqlitePath, fncloudrun.EnvLogLevel + "=warn"})
}

// startFakeEnv serves a fakeRun whose Job defines the container
// environment env.
func startFakeEnv(tb testing.TB, env []string) *fakeRun {
	tb.Helper()
	f := &fakeRun{execs: map[string]*fakeExec{}, env: env}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	s := grpc.NewServer()
	runpb.RegisterJobsServer(s, f)
	runpb.RegisterExecutionsServer(s, f)
	longrunningpb.RegisterOperationsServer(s, f)
	go s.Serve(lis)
	f.addr = lis.Addr().String()
	tb.Cleanup(func() {
		f.releaseRunJob()
		s.Stop()
		f.killAll(tb)
	})
	return f
}

func (f *fakeRun) RunJob(ctx context.Context, req *runpb.RunJobRequest) (*longrunningpb.Operation, error) {
	if req.GetName() != testJob {
		return nil, status.Errorf(codes.NotFound, "job %s not found", req.GetName())
	}
	if err := f.waitRunGate(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, proto.Clone(req).(*runpb.RunJobRequest))
	name := fmt.Sprintf("%s/executions/probe-%05d", testJob, len(f.reqs))
	env := append([]string{fncloudrun.EnvExecution + "=" + name}, f.env...)
	for _, o := range req.GetOverrides().GetContainerOverrides() {
		for _, e := range o.GetEnv() {
			env = append(env, e.GetName()+"="+e.GetValue())
		}
	}
	x := &fakeExec{cmd: exec.Command(workerBin), done: make(chan struct{})}
	x.cmd.Env = env
	x.cmd.Stderr = &x.out
	f.execs[name] = x
	if !f.pending {
		if err := f.startContainer(x); err != nil {
			return nil, err
		}
	}
	meta, _ := anypb.New(&runpb.Execution{Name: name, Job: testJob, TaskCount: 1})
	return &longrunningpb.Operation{Name: name + "/operations/run", Metadata: meta}, nil
}

// startContainer starts x's process; f.mu is held.
func (f *fakeRun) startContainer(x *fakeExec) error {
	if err := x.cmd.Start(); err != nil {
		return status.Errorf(codes.Internal, "start container: %v", err)
	}
	x.started = true
	go func() {
		x.cmd.Wait()
		f.mu.Lock()
		x.exit = x.cmd.ProcessState.ExitCode()
		f.mu.Unlock()
		close(x.done)
	}()
	return nil
}

func (f *fakeRun) GetExecution(_ context.Context, req *runpb.GetExecutionRequest) (*runpb.Execution, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x, ok := f.execs[req.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "execution %s not found", req.GetName())
	}
	e := &runpb.Execution{Name: req.GetName(), Job: testJob, TaskCount: 1, LogUri: "https://console.cloud.google.com/logs/" + req.GetName()}
	cond := &runpb.Condition{Type: "Completed", State: runpb.Condition_CONDITION_PENDING}
	reason := func(r runpb.Condition_ExecutionReason) {
		cond.Reasons = &runpb.Condition_ExecutionReason_{ExecutionReason: r}
	}
	select {
	case <-x.done:
		switch {
		case x.cancelled:
			e.CancelledCount, cond.State, cond.Message = 1, runpb.Condition_CONDITION_FAILED, "The execution was cancelled."
			reason(runpb.Condition_CANCELLED)
		case x.exit != 0:
			e.FailedCount, cond.State, cond.Message = 1, runpb.Condition_CONDITION_FAILED, fmt.Sprintf("Task failed with exit code %d.", x.exit)
			reason(runpb.Condition_NON_ZERO_EXIT_CODE)
		default:
			e.SucceededCount, cond.State = 1, runpb.Condition_CONDITION_SUCCEEDED
		}
	default:
		if x.started {
			e.RunningCount = 1
		}
		if x.cancelled {
			reason(runpb.Condition_CANCELLING)
		}
	}
	e.Conditions = []*runpb.Condition{cond}
	return e, nil
}

func (f *fakeRun) CancelExecution(_ context.Context, req *runpb.CancelExecutionRequest) (*longrunningpb.Operation, error) {
	f.mu.Lock()
	f.cancels++
	f.mu.Unlock()
	if err := f.cancel(req.GetName()); err != nil {
		return nil, err
	}
	return &longrunningpb.Operation{Name: req.GetName() + "/operations/cancel"}, nil
}

// cancel stops execution name as CancelExecution does: a pending
// execution ends at once, a running container gets SIGTERM, then SIGKILL
// after cancelGrace.
func (f *fakeRun) cancel(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x, ok := f.execs[name]
	if !ok {
		return status.Errorf(codes.NotFound, "execution %s not found", name)
	}
	select {
	case <-x.done:
		return status.Errorf(codes.FailedPrecondition, "execution %s already completed", name)
	default:
	}
	x.cancelled = true
	if !x.started {
		close(x.done)
		return nil
	}
	x.cmd.Process.Signal(syscall.SIGTERM)
	go func() {
		select {
		case <-x.done:
		case <-time.After(cancelGrace):
			x.cmd.Process.Kill()
		}
	}()
	return nil
}

func (f *fakeRun) GetOperation(_ context.Context, req *longrunningpb.GetOperationRequest) (*longrunningpb.Operation, error) {
	return &longrunningpb.Operation{Name: req.GetName()}, nil
}

// requests returns the RunJobRequests received so far.
func (f *fakeRun) requests() []*runpb.RunJobRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*runpb.RunJobRequest(nil), f.reqs...)
}

// killAll kills the containers still running and waits for them; on
// failure it logs their output.
func (f *fakeRun) killAll(tb testing.TB) {
	f.mu.Lock()
	f.pending = false
	execs := make(map[string]*fakeExec, len(f.execs))
	for k, v := range f.execs {
		execs[k] = v
	}
	f.mu.Unlock()
	for name, x := range execs {
		f.mu.Lock()
		started := x.started
		f.mu.Unlock()
		if !started {
			continue
		}
		x.cmd.Process.Kill()
		<-x.done
		if tb.Failed() {
			tb.Logf("container of %s (exit %d):\n%s", name, x.exit, x.out.String())
		}
	}
}

// outputs returns what the containers wrote to stderr (their logs) so far.
func (f *fakeRun) outputs() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b bytes.Buffer
	for _, x := range f.execs {
		select {
		case <-x.done:
			b.Write(x.out.Bytes())
		default: // still writing; read once it ended
		}
	}
	return b.String()
}
