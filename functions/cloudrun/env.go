package cloudrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
)

// The environment variables the Cloud Run container reads. The Job or
// service definition sets all but [EnvInvocation], which the launcher sets
// per execution through RunJob's container overrides.
const (
	// EnvMode is [ModeJob] or [ModeService]. Optional; defaults to job.
	EnvMode = "SORTIE_CLOUDRUN_MODE"
	// EnvInvocation is the attempt's [sortie.Invocation] as JSON, in job
	// mode. Required in job mode; at most [MaxEnvValueBytes] bytes.
	EnvInvocation = "SORTIE_INVOCATION"
	// EnvSQLitePath is the SQLite control plane's file (for example on a
	// mounted volume), from the deployment's configuration, never from an
	// invocation. Exactly one of it and [EnvDynamoTable] is required.
	EnvSQLitePath = "SORTIE_SQLITE_PATH"
	// EnvDynamoTable is the DynamoDB control plane's table (the same name
	// the Lambda function reads). AWS credentials and region come from the
	// SDK's usual sources: AWS_* variables from a secret, or a web identity
	// token file for workload identity federation. Exactly one of it and
	// [EnvSQLitePath] is required.
	EnvDynamoTable = "SORTIE_DYNAMODB_TABLE"
	// EnvDynamoEndpoint overrides the DynamoDB endpoint URL. Optional.
	EnvDynamoEndpoint = "SORTIE_DYNAMODB_ENDPOINT"
	// EnvTriggerRules is the path of the trigger rules file in the
	// container image (host configuration, never from an event). Optional,
	// service mode only: with it the service also takes CloudEvents on
	// [EventsPath] and starts runs on the Job of [EnvJob].
	EnvTriggerRules = "SORTIE_TRIGGER_RULES"
	// EnvJob is the worker Job's full name,
	// "projects/PROJECT/locations/REGION/jobs/JOB", that triggered runs are
	// launched on. Required with [EnvTriggerRules].
	EnvJob = "SORTIE_CLOUDRUN_JOB"
	// EnvLogLevel is debug, info, warn or error. Optional; defaults to info.
	EnvLogLevel = "SORTIE_LOG_LEVEL"
	// EnvPort is the port service mode listens on (Cloud Run sets it).
	// Optional; defaults to 8080.
	EnvPort = "PORT"
	// EnvAudience is the audience a caller's Google ID token must carry in
	// service mode: the service's URL. Required in service mode.
	EnvAudience = "SORTIE_SERVICE_AUDIENCE"
	// EnvExecution is the execution name Cloud Run gives a job's container
	// (CLOUD_RUN_EXECUTION); it names the worker in claims. Optional.
	EnvExecution = "CLOUD_RUN_EXECUTION"
)

// Modes of the container ([EnvMode]).
const (
	// ModeJob executes the one invocation in [EnvInvocation] and exits.
	ModeJob = "job"
	// ModeService serves invocations POSTed to [InvocationsPath]; see [Handler].
	ModeService = "service"
)

// MaxEnvValueBytes is the largest value of one environment variable Cloud
// Run accepts: 32 KiB (32,768 bytes), per the "Cloud Run quotas and
// limits" page ("Maximum size of an environment variable value").
const MaxEnvValueBytes = 32 << 10

// Env is the container's configuration, read by [LoadEnv].
type Env struct {
	Mode, SQLitePath, Execution, Port, Audience string
	DynamoTable, DynamoEndpoint                 string
	TriggerRules, Job                           string
	// Invocation is the raw [EnvInvocation] value (job mode).
	Invocation string
	LogLevel   slog.Level
}

// LoadEnv reads the Env* variables through getenv (os.Getenv) and
// validates them, returning a [*sortie.ValidationError] naming the variable.
func LoadEnv(getenv func(string) string) (*Env, error) {
	e := &Env{Mode: getenv(EnvMode), SQLitePath: getenv(EnvSQLitePath), Execution: getenv(EnvExecution), Invocation: getenv(EnvInvocation),
		Port: getenv(EnvPort), Audience: getenv(EnvAudience),
		DynamoTable: getenv(EnvDynamoTable), DynamoEndpoint: getenv(EnvDynamoEndpoint),
		TriggerRules: getenv(EnvTriggerRules), Job: getenv(EnvJob)}
	if e.Mode == "" {
		e.Mode = ModeJob
	}
	if e.Mode != ModeJob && e.Mode != ModeService {
		return nil, sortie.Invalidf(EnvMode, "%q must be %q or %q", e.Mode, ModeJob, ModeService)
	}
	if e.Mode == ModeService && e.Audience == "" {
		return nil, sortie.Invalidf(EnvAudience, "service mode needs the ID token audience (the service URL)")
	}
	if e.Port == "" {
		e.Port = "8080"
	}
	if e.TriggerRules != "" && (e.Mode != ModeService || e.Job == "") {
		return nil, sortie.Invalidf(EnvTriggerRules, "triggers need service mode and %s (the worker Job's full name)", EnvJob)
	}
	if (e.SQLitePath == "") == (e.DynamoTable == "") {
		return nil, sortie.Invalidf(EnvSQLitePath, "set exactly one of %s (a SQLite file) and %s (a DynamoDB table): the control plane", EnvSQLitePath, EnvDynamoTable)
	}
	if e.Mode == ModeJob && e.Invocation == "" {
		return nil, sortie.Invalidf(EnvInvocation, "job mode needs the invocation JSON")
	}
	if len(e.Invocation) > MaxEnvValueBytes {
		return nil, sortie.Invalidf(EnvInvocation, "%d bytes, over Cloud Run's limit of %d bytes", len(e.Invocation), MaxEnvValueBytes)
	}
	if lvl := getenv(EnvLogLevel); lvl != "" {
		if err := e.LogLevel.UnmarshalText([]byte(lvl)); err != nil {
			return nil, sortie.Invalidf(EnvLogLevel, "%q is not debug, info, warn or error", lvl)
		}
	}
	return e, nil
}

// RunJob is job mode: it decodes the invocation of [EnvInvocation] and
// executes it with w, reporting to cp. A refused claim (a duplicate
// delivery: sortie.ErrConflict, ErrCancelRequested or ErrTerminal) is not
// an error: nothing ran and the task succeeds. It returns an error for an
// invalid invocation ([*sortie.ValidationError]) and when the outcome could
// not be stored, so the task fails and the execution's status tells the
// reconciler.
func (e *Env) RunJob(ctx context.Context, w *functions.Worker, cp sortie.ControlPlane) (sortie.Outcome, error) {
	inv, err := sortie.DecodeInvocation([]byte(e.Invocation))
	if err != nil {
		return sortie.Outcome{}, fmt.Errorf("cloudrun job: %s: %w", EnvInvocation, err)
	}
	owner := "cloudrun-job:" + e.Execution
	wk := *w
	wk.Owner = owner
	inner, err := functions.NewReporter(inv, cp, owner, callbackClient)
	if err != nil {
		return sortie.Outcome{}, fmt.Errorf("cloudrun job: run %s attempt %d: %w", inv.RunID, inv.Attempt, err)
	}
	rep := &finishNoter{Reporter: inner}
	o, err := wk.Execute(ctx, inv, rep)
	if err != nil && !rep.finishing && refused(err) {
		return o, nil
	}
	return o, err
}

// refused reports whether err is a refused claim.
func refused(err error) bool {
	return errors.Is(err, sortie.ErrConflict) || errors.Is(err, sortie.ErrCancelRequested) || errors.Is(err, sortie.ErrTerminal)
}

// finishNoter notes that Finish was reached, so a failed Finish is told
// apart from a refused claim.
type finishNoter struct {
	functions.Reporter
	finishing bool
}

func (r *finishNoter) Finish(ctx context.Context, o sortie.Outcome) error {
	r.finishing = true
	return r.Reporter.Finish(ctx, o)
}

// callbackClient sends callbacks of invocations that report to their host
// over HTTPS (the URL comes from the invocation, which only callers the
// service or job authenticates can send).
var callbackClient = &http.Client{Timeout: 30 * time.Second}
