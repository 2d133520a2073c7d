package cloudrun

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	run "cloud.google.com/go/run/apiv2"
	"cloud.google.com/go/run/apiv2/runpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sortie-run/sortie"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
)

// Provider is the [sortie.Ref] provider of this package's launchers.
const Provider = "cloudrun"

// MaxEnvValueBytes is Cloud Run's limit on one environment variable value,
// 32 KiB; see [fncloudrun.MaxEnvValueBytes].
const MaxEnvValueBytes = fncloudrun.MaxEnvValueBytes

// JobsOptions configures a [JobsLauncher].
type JobsOptions struct {
	// Job is the pre-deployed Job's full name,
	// "projects/PROJECT/locations/REGION/jobs/JOB". Required.
	Job string
	// Container is the name of the Job's container the overrides apply
	// to. Optional; defaults to the Job's only container (empty name).
	Container string
}

// JobsLauncher starts each attempt as one execution of a pre-deployed Cloud
// Run Job (RunJob with overrides: the invocation in the container's
// SORTIE_INVOCATION variable, task count 1, task timeout from the
// attempt's deadline). It implements [sortie.Launcher], [sortie.Canceler]
// (CancelExecution), [sortie.Describer] (GetExecution) and
// [sortie.InvocationLimiter] (32 KiB, so the engine refuses a larger
// invocation at submit).
type JobsLauncher struct {
	jobs  *run.JobsClient
	execs *run.ExecutionsClient
	opts  JobsOptions
	now   func() time.Time

	mu       sync.Mutex
	launched map[string]sortie.Ref // launch ID → Ref of its execution
}

var (
	_ sortie.Launcher          = (*JobsLauncher)(nil)
	_ sortie.Canceler          = (*JobsLauncher)(nil)
	_ sortie.Describer         = (*JobsLauncher)(nil)
	_ sortie.InvocationLimiter = (*JobsLauncher)(nil)
)

// MaxInvocationBytes implements [sortie.InvocationLimiter]: the invocation
// travels as the value of one environment variable, at most
// [MaxEnvValueBytes] (Cloud Run's 32 KiB limit), so the engine refuses a
// larger one at submit.
func (l *JobsLauncher) MaxInvocationBytes() (int, string) {
	return MaxEnvValueBytes, "Cloud Run's environment variable value (" + fncloudrun.EnvInvocation + ", 32 KiB)"
}

// NewJobs returns a launcher of opts.Job through jobs and execs. It
// returns a [*sortie.ValidationError] when a client is nil or Job is not a
// full Job name.
func NewJobs(jobs *run.JobsClient, execs *run.ExecutionsClient, opts JobsOptions) (*JobsLauncher, error) {
	if jobs == nil || execs == nil {
		return nil, sortie.Invalidf("clients", "a Jobs and an Executions client are required")
	}
	if _, _, _, err := parseJob(opts.Job); err != nil {
		return nil, err
	}
	return &JobsLauncher{jobs: jobs, execs: execs, opts: opts, now: time.Now, launched: map[string]sortie.Ref{}}, nil
}

// Start runs the Job once for inv. An invocation whose JSON is over
// [MaxEnvValueBytes] is refused before any call with a
// [*sortie.ValidationError] (field "invocation") naming the limit; passing
// it by reference (object storage) is not implemented. The execution name
// comes from the operation's metadata: Start never waits for the execution.
// A retried Start with the same launch ID returns the first execution's Ref
// while this launcher lives (the API cannot label an execution per run;
// across processes the worker's claim refuses a duplicate delivery).
func (l *JobsLauncher) Start(ctx context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	if ref, ok := l.known(inv.LaunchID); ok {
		return ref, nil
	}
	req, err := l.request(inv)
	if err != nil {
		return sortie.Ref{}, err
	}
	op, err := l.jobs.RunJob(ctx, req)
	if err != nil {
		return sortie.Ref{}, classify(fmt.Sprintf("cloudrun: run job %s for run %s attempt %d", l.opts.Job, inv.RunID, inv.Attempt), err)
	}
	exec, err := op.Metadata()
	if err != nil || exec == nil || exec.GetName() == "" {
		return sortie.Ref{}, fmt.Errorf("cloudrun: run job %s for run %s attempt %d: operation %s has no execution in its metadata (%v): %w",
			l.opts.Job, inv.RunID, inv.Attempt, op.Name(), err, sortie.ErrUnavailable)
	}
	ref := l.ref(inv, exec.GetName(), op.Name())
	l.mu.Lock()
	l.launched[inv.LaunchID] = ref
	l.mu.Unlock()
	return ref, nil
}

func (l *JobsLauncher) known(launchID string) (sortie.Ref, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ref, ok := l.launched[launchID]
	return ref, ok
}

// request builds the RunJobRequest of inv.
func (l *JobsLauncher) request(inv *sortie.Invocation) (*runpb.RunJobRequest, error) {
	b, err := json.Marshal(inv)
	if err != nil {
		return nil, fmt.Errorf("cloudrun: encode invocation of run %s: %w", inv.RunID, err)
	}
	if len(b) > MaxEnvValueBytes {
		return nil, sortie.Invalidf("invocation", "%d bytes of JSON, over Cloud Run's environment variable value limit of %d bytes (32 KiB); invocations by reference are not supported",
			len(b), MaxEnvValueBytes)
	}
	timeout := max(time.Second, time.UnixMilli(inv.DeadlineMs).Sub(l.now()).Round(time.Second)+time.Second)
	return &runpb.RunJobRequest{Name: l.opts.Job, Overrides: &runpb.RunJobRequest_Overrides{
		ContainerOverrides: []*runpb.RunJobRequest_Overrides_ContainerOverride{{
			Name: l.opts.Container,
			Env: []*runpb.EnvVar{
				{Name: fncloudrun.EnvMode, Values: &runpb.EnvVar_Value{Value: fncloudrun.ModeJob}},
				{Name: fncloudrun.EnvInvocation, Values: &runpb.EnvVar_Value{Value: string(b)}},
			},
		}},
		TaskCount: 1,
		Timeout:   durationpb.New(timeout),
	}}, nil
}

func (l *JobsLauncher) ref(inv *sortie.Invocation, execution, operation string) sortie.Ref {
	project, region, _, _ := parseJob(l.opts.Job)
	ref := sortie.Ref{Provider: Provider, Account: project, Region: region, Resource: l.opts.Job,
		ID: execution, RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}
	ref.Detail = map[string]string{"mode": "job", "operation": operation}
	return ref
}
