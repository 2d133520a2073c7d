package cloudrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/keyring"
	"github.com/sortie-run/sortie/destination"
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
	// invocation. Optional; not with [EnvDynamoTable]. Without either the
	// container has no control plane and takes only invocations that
	// report over the host's signed callbacks.
	EnvSQLitePath = "SORTIE_SQLITE_PATH"
	// EnvDynamoTable is the DynamoDB control plane's table (the same name
	// the Lambda function reads). AWS credentials: with [EnvAWSRoleARN],
	// the role assumed with the service account's Google ID token; else the
	// SDK's usual sources (AWS_* variables, for example from Secret
	// Manager). AWS_REGION names the region. Optional; not with
	// [EnvSQLitePath].
	EnvDynamoTable = "SORTIE_DYNAMODB_TABLE"
	// EnvDynamoEndpoint overrides the DynamoDB endpoint URL. Optional.
	EnvDynamoEndpoint = "SORTIE_DYNAMODB_ENDPOINT"
	// EnvAWSRoleARN is the IAM role the container reaches DynamoDB as,
	// assumed through STS AssumeRoleWithWebIdentity with a Google ID token
	// of its service account from the metadata server (workload identity
	// federation: no AWS key is stored). Optional, with [EnvDynamoTable]
	// only; without it the AWS SDK's usual credential sources apply.
	EnvAWSRoleARN = "SORTIE_AWS_ROLE_ARN"
	// EnvAWSTokenAudience is the audience of that ID token, which the
	// role's trust policy checks as accounts.google.com:oaud. Optional;
	// defaults to [DefaultAWSTokenAudience].
	EnvAWSTokenAudience = "SORTIE_AWS_TOKEN_AUDIENCE"
	// EnvKMSKeys is the keyring that opens inline configuration:
	// "ID=KEY[,ID=KEY]" with Cloud KMS key names
	// (projects/P/locations/L/keyRings/R/cryptoKeys/K), the first primary,
	// the same keyring the launching host seals with. Optional; without it
	// inline configuration is off and an attempt carrying some is rejected.
	EnvKMSKeys = "SORTIE_KMS_KEYS"
	// EnvKMSEndpoint overrides the Cloud KMS endpoint, host:port. A
	// loopback address is an emulator's: plaintext gRPC without
	// credentials. Optional; defaults to Cloud KMS.
	EnvKMSEndpoint = "SORTIE_KMS_ENDPOINT"
	// EnvConfigRefs is the allowlist of configuration references
	// (functions.LoadConfigRefs): the path of its file in the image, or
	// the JSON document itself (the terraform module sets that).
	// Optional; without it every reference is refused.
	EnvConfigRefs = "SORTIE_CONFIG_REFS"
	// EnvSecretManagerEndpoint overrides the Secret Manager endpoint of
	// "gcp_secret" references, host:port; a loopback address is an
	// emulator's (plaintext gRPC without credentials). Optional.
	EnvSecretManagerEndpoint = "SORTIE_SECRETMANAGER_ENDPOINT"
	// EnvConfigEnv is the inline configuration's environment allowlist,
	// comma-separated names, as the Lambda function reads it. Optional;
	// defaults to none (every configuration is refused).
	EnvConfigEnv = "SORTIE_CONFIG_ENV"
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
	// EnvAudience is the audiences a caller's Google ID token may carry in
	// service mode, comma-separated: the service's URLs (its deterministic
	// https://SERVICE-PROJECT_NUMBER.REGION.run.app) and custom audiences;
	// the run.app URL a request arrives on is accepted too (see
	// [IDTokenVerifier]). Required in service mode.
	EnvAudience = "SORTIE_SERVICE_AUDIENCE"
	// EnvCallers is the allowlist of callers in service mode,
	// comma-separated emails of the service accounts (the launching
	// hosts', Eventarc's) whose ID tokens are accepted. Required in service
	// mode.
	EnvCallers = "SORTIE_SERVICE_CALLERS"
	// EnvExecution is the execution name Cloud Run gives a job's container
	// (CLOUD_RUN_EXECUTION); it names the worker in claims. Optional.
	EnvExecution = "CLOUD_RUN_EXECUTION"
	// EnvMemory and EnvCPU are the container's memory and CPU limits as
	// the Job or service sets them ("512Mi", "1"), recorded on each
	// attempt's usage for its cost. Optional; default to [DefaultMemory]
	// and [DefaultCPU].
	EnvMemory = "SORTIE_CLOUDRUN_MEMORY"
	EnvCPU    = "SORTIE_CLOUDRUN_CPU"
)

// Modes of the container ([EnvMode]).
const (
	// ModeJob executes the one invocation in [EnvInvocation] and exits.
	ModeJob = "job"
	// ModeService serves invocations POSTed to [InvocationsPath]; see [Handler].
	ModeService = "service"
)

// DefaultAWSTokenAudience is the audience of the Google ID token
// exchanged for AWS credentials when [EnvAWSTokenAudience] is not set.
const DefaultAWSTokenAudience = "sts.amazonaws.com"

// MaxEnvValueBytes is the largest value of one environment variable Cloud
// Run accepts: 32 KiB (32,768 bytes), per the "Cloud Run quotas and
// limits" page ("Maximum size of an environment variable value").
const MaxEnvValueBytes = 32 << 10

// Env is the container's configuration, read by [LoadEnv].
type Env struct {
	Mode, SQLitePath, Execution, Port string
	// Audiences and Callers are [EnvAudience] and [EnvCallers].
	Audiences, Callers           []string
	DynamoTable, DynamoEndpoint  string
	AWSRoleARN, AWSTokenAudience string
	TriggerRules, Job            string
	// KMSKeys are the keyring's (ID, Cloud KMS key name) pairs, primary
	// first; KMSEndpoint overrides the Cloud KMS endpoint.
	KMSKeys     [][2]string
	KMSEndpoint string
	ConfigEnv   []string
	// Invocation is the raw [EnvInvocation] value (job mode).
	Invocation string
	// Size is the container's size ([EnvMemory], [EnvCPU]).
	Size     Size
	started  time.Time // when LoadEnv ran: a job's billed time starts before it
	LogLevel slog.Level
	// Destinations is the worker's destination policy, from
	// destination.EnvAllow and its siblings; with none set, the zero
	// policy: handlers reach no destination.
	Destinations *destination.Policy
	// Models is the worker's model policy, from sortie.EnvAllowedModels
	// and its siblings; nil (every model) when none is set.
	Models *sortie.ModelPolicy
	// AllowTools and AllowConnections are functions.EnvAllowTools and
	// EnvAllowConnections: without them every tool call and connection
	// is refused.
	AllowTools, AllowConnections []string
	// ConfigRefs is the allowlist of configuration references of
	// [EnvConfigRefs] (its Secrets not set), nil without one;
	// SecretManagerEndpoint overrides the Secret Manager endpoint.
	ConfigRefs            *functions.ConfigRefs
	SecretManagerEndpoint string
}

// LoadEnv reads the Env* variables through getenv (os.Getenv) and
// validates them, returning a [*sortie.ValidationError] naming the variable.
// A job's billed time is counted from this call.
func LoadEnv(getenv func(string) string) (*Env, error) {
	e := &Env{started: time.Now(), Mode: getenv(EnvMode), SQLitePath: getenv(EnvSQLitePath), Execution: getenv(EnvExecution), Invocation: getenv(EnvInvocation),
		Port: getenv(EnvPort), Audiences: list(getenv(EnvAudience)), Callers: list(getenv(EnvCallers)),
		DynamoTable: getenv(EnvDynamoTable), DynamoEndpoint: getenv(EnvDynamoEndpoint),
		AWSRoleARN: getenv(EnvAWSRoleARN), AWSTokenAudience: getenv(EnvAWSTokenAudience),
		TriggerRules: getenv(EnvTriggerRules), Job: getenv(EnvJob), KMSEndpoint: getenv(EnvKMSEndpoint)}
	if e.Mode == "" {
		e.Mode = ModeJob
	}
	if e.Mode != ModeJob && e.Mode != ModeService {
		return nil, sortie.Invalidf(EnvMode, "%q must be %q or %q", e.Mode, ModeJob, ModeService)
	}
	if e.Mode == ModeService && len(e.Audiences) == 0 {
		return nil, sortie.Invalidf(EnvAudience, "service mode needs the ID token audiences (the service's URL)")
	}
	if e.Mode == ModeService && len(e.Callers) == 0 {
		return nil, sortie.Invalidf(EnvCallers, "service mode needs the allowlist of callers (the launchers' service account emails)")
	}
	if e.Port == "" {
		e.Port = "8080"
	}
	if e.TriggerRules != "" && (e.Mode != ModeService || e.Job == "" || !e.HasControlPlane()) {
		return nil, sortie.Invalidf(EnvTriggerRules, "triggers need service mode, a control plane and %s (the worker Job's full name)", EnvJob)
	}
	if err := e.loadControlPlane(); err != nil {
		return nil, err
	}
	if e.Mode == ModeJob && e.Invocation == "" {
		return nil, sortie.Invalidf(EnvInvocation, "job mode needs the invocation JSON")
	}
	if len(e.Invocation) > MaxEnvValueBytes {
		return nil, sortie.Invalidf(EnvInvocation, "%d bytes, over Cloud Run's limit of %d bytes", len(e.Invocation), MaxEnvValueBytes)
	}
	if err := e.loadInlineConfig(getenv); err != nil {
		return nil, err
	}
	if err := e.loadCompute(getenv); err != nil {
		return nil, err
	}
	if lvl := getenv(EnvLogLevel); lvl != "" {
		if err := e.LogLevel.UnmarshalText([]byte(lvl)); err != nil {
			return nil, sortie.Invalidf(EnvLogLevel, "%q is not debug, info, warn or error", lvl)
		}
	}
	p, err := destination.FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	e.Destinations = p
	if e.Models, err = sortie.ModelPolicyFromEnv(getenv); err != nil {
		return nil, err
	}
	e.AllowTools, e.AllowConnections = functions.ParseAllow(getenv(functions.EnvAllowTools)), functions.ParseAllow(getenv(functions.EnvAllowConnections))
	e.SecretManagerEndpoint = getenv(EnvSecretManagerEndpoint)
	if v := getenv(EnvConfigRefs); v != "" {
		if e.ConfigRefs, err = functions.LoadConfigRefs(v); err != nil {
			return nil, sortie.Invalidf(EnvConfigRefs, "%v", err)
		}
	}
	return e, nil
}

// HasControlPlane reports whether the container reports to a control
// plane of its own (SQLite or DynamoDB); without one it takes only
// invocations that report over callbacks.
func (e *Env) HasControlPlane() bool { return e.SQLitePath != "" || e.DynamoTable != "" }

// loadControlPlane checks the control plane's variables and defaults the
// token audience.
func (e *Env) loadControlPlane() error {
	switch {
	case e.SQLitePath != "" && e.DynamoTable != "":
		return sortie.Invalidf(EnvSQLitePath, "set at most one of %s (a SQLite file) and %s (a DynamoDB table): the control plane", EnvSQLitePath, EnvDynamoTable)
	case e.AWSRoleARN != "" && e.DynamoTable == "":
		return sortie.Invalidf(EnvAWSRoleARN, "the role reaches the DynamoDB control plane: set %s too", EnvDynamoTable)
	case e.AWSRoleARN != "" && !strings.HasPrefix(e.AWSRoleARN, "arn:"):
		return sortie.Invalidf(EnvAWSRoleARN, "%q is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)", e.AWSRoleARN)
	}
	if e.AWSTokenAudience == "" {
		e.AWSTokenAudience = DefaultAWSTokenAudience
	}
	return nil
}

// loadInlineConfig reads the keyring and the allowlist; the keys are
// checked when the keyring is opened.
func (e *Env) loadInlineConfig(getenv func(string) string) error {
	keys, err := keyring.ParseList(EnvKMSKeys, getenv(EnvKMSKeys))
	if err != nil {
		return err
	}
	e.KMSKeys = keys
	e.ConfigEnv = functions.ParseAllow(getenv(EnvConfigEnv))
	return nil
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
	rep := meter(inner, e.started, e.Size, "job")
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

// callbackClient sends callbacks of invocations that report to their host
// over HTTPS (the URL comes from the invocation, which only callers the
// service or job authenticates can send).
var callbackClient = &http.Client{Timeout: 30 * time.Second}

// list splits a comma-separated value, dropping empty entries and spaces.
func list(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
