package cloudrun

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cloud.google.com/go/run/apiv2/runpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sortie-run/sortie"
)

// Cancel stops the attempt's execution with CancelExecution (Cloud Run
// sends the container SIGTERM, then SIGKILL after its grace period), without
// waiting for the operation. It is idempotent: an execution that is gone
// (NotFound) or already ended (FailedPrecondition) is success. It returns
// a [*sortie.ValidationError] for a Ref of another provider or mode.
func (l *JobsLauncher) Cancel(ctx context.Context, ref sortie.Ref) error {
	if err := checkJobRef(ref); err != nil {
		return err
	}
	_, err := l.execs.CancelExecution(ctx, &runpb.CancelExecutionRequest{Name: ref.ID})
	switch status.Code(err) {
	case codes.OK, codes.NotFound, codes.FailedPrecondition:
		return nil
	}
	return classify(fmt.Sprintf("cloudrun: cancel execution %s of run %s attempt %d", ref.ID, ref.RunID, ref.Attempt), err)
}

// Describe reads the execution with GetExecution and maps it: an
// execution cancelled (the Completed condition's execution reason
// CANCELLED, or a cancelled task) is cancelled, by Sortie's Cancel or by
// anyone outside it (the console, gcloud run jobs executions cancel); a
// deleted one (reason DELETED) is not-found; a failed task, or a failed
// Completed condition, is failed; a Completed condition that succeeded, or
// a succeeded task, is succeeded; otherwise (pending, running, or still
// cancelling) running. Reason names the task counts, the condition's
// message and reason (Cloud Run Admin API v2, Condition.ExecutionReason).
// NotFound is [sortie.PhaseNotFound]; any other error is
// [sortie.PhaseUnknown] with the error (Transient when retrying may help).
// LogURL is the execution's log URI.
func (l *JobsLauncher) Describe(ctx context.Context, ref sortie.Ref) (sortie.Status, error) {
	if err := checkJobRef(ref); err != nil {
		return sortie.Status{Phase: sortie.PhaseUnknown}, err
	}
	exec, err := l.execs.GetExecution(ctx, &runpb.GetExecutionRequest{Name: ref.ID})
	if status.Code(err) == codes.NotFound {
		return sortie.Status{Phase: sortie.PhaseNotFound, Reason: "execution " + ref.ID + " not found"}, nil
	}
	if err != nil {
		err = classify(fmt.Sprintf("cloudrun: get execution %s", ref.ID), err)
		return sortie.Status{Phase: sortie.PhaseUnknown, Transient: errors.Is(err, sortie.ErrUnavailable), Reason: err.Error()}, err
	}
	return executionStatus(exec), nil
}

// executionStatus maps an execution to a Status.
func executionStatus(e *runpb.Execution) sortie.Status {
	st := sortie.Status{Phase: sortie.PhaseRunning, LogURL: e.GetLogUri()}
	var completed *runpb.Condition
	for _, c := range e.GetConditions() {
		if c.GetType() == "Completed" {
			completed = c
		}
	}
	reason := completed.GetExecutionReason()
	switch {
	case reason == runpb.Condition_CANCELLED || (e.GetCancelledCount() > 0 && reason != runpb.Condition_CANCELLING):
		st.Phase = sortie.PhaseCancelled
	case reason == runpb.Condition_DELETED:
		st.Phase = sortie.PhaseNotFound
	case reason == runpb.Condition_CANCELLING:
	case e.GetFailedCount() > 0 || completed.GetState() == runpb.Condition_CONDITION_FAILED:
		st.Phase = sortie.PhaseFailed
	case completed.GetState() == runpb.Condition_CONDITION_SUCCEEDED ||
		(e.GetTaskCount() > 0 && e.GetSucceededCount() >= e.GetTaskCount()):
		st.Phase = sortie.PhaseSucceeded
	}
	st.Reason = fmt.Sprintf("tasks: %d running, %d succeeded, %d failed, %d cancelled, %d retried",
		e.GetRunningCount(), e.GetSucceededCount(), e.GetFailedCount(), e.GetCancelledCount(), e.GetRetriedCount())
	if msg := completed.GetMessage(); msg != "" {
		st.Reason += "; " + msg
	}
	if reason != runpb.Condition_EXECUTION_REASON_UNDEFINED {
		st.Reason = strings.ToLower(reason.String()) + "; " + st.Reason
	}
	return st
}

func checkJobRef(ref sortie.Ref) error {
	if ref.Provider != Provider {
		return sortie.Invalidf("ref.provider", "%q is not %q", ref.Provider, Provider)
	}
	if !strings.Contains(ref.ID, "/executions/") {
		return sortie.Invalidf("ref.id", "%q is not a Cloud Run execution name", ref.ID)
	}
	return nil
}

// parseJob splits "projects/P/locations/L/jobs/J".
func parseJob(name string) (project, region, job string, err error) {
	p := strings.Split(name, "/")
	if len(p) != 6 || p[0] != "projects" || p[2] != "locations" || p[4] != "jobs" || p[1] == "" || p[3] == "" || p[5] == "" {
		return "", "", "", sortie.Invalidf("job", "%q is not projects/PROJECT/locations/REGION/jobs/JOB", name)
	}
	return p[1], p[3], p[5], nil
}

// classify wraps err once with op and the sentinel its gRPC code maps to.
func classify(op string, err error) error {
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Aborted, codes.Internal:
		return fmt.Errorf("%s: %w: %w", op, sortie.ErrUnavailable, err)
	case codes.NotFound:
		return fmt.Errorf("%s: %w: %w", op, sortie.ErrNotFound, err)
	case codes.InvalidArgument, codes.FailedPrecondition:
		return fmt.Errorf("%s: %w: %w", op, sortie.Invalidf("invocation", "Cloud Run refused it"), err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w: %w", op, sortie.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
