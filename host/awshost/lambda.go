package awshost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/awssecrets"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/functions/triggers"
	lambdalauncher "github.com/sortie-run/sortie/launchers/lambda"
)

// Handler is a Lambda function's handler, for aws-lambda-go's lambda.Start.
type Handler = func(ctx context.Context, event json.RawMessage) (any, error)

// flushTimeout bounds the span flush after each invocation.
const flushTimeout = 2 * time.Second

// Flushing returns h calling flush (host/telemetry's Tracing.Flush)
// before it returns, for at most 2 s within the invocation's time: Lambda
// freezes the execution environment as soon as the handler returns, so
// spans still batched then would be exported late, or lost with the
// environment. A failed flush is logged, never the invocation's error.
func Flushing(h Handler, flush func(context.Context) error, log *slog.Logger) Handler {
	return func(ctx context.Context, event json.RawMessage) (any, error) {
		out, err := h(ctx, event)
		fctx, cancel := context.WithTimeout(ctx, flushTimeout)
		defer cancel()
		if ferr := flush(fctx); ferr != nil {
			log.Warn("spans not flushed before the handler returned", "err", ferr)
		}
		return out, err
	}
}

// LambdaConfig is the AWS configuration of a Lambda function, from the
// runtime's environment (Lambda Developer Guide, "Defined runtime
// environment variables"): AWS_REGION, and the execution role's
// credentials in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN; AWS_MAX_ATTEMPTS, when set, bounds the tries of
// every call. Unlike the SDK's config.LoadDefaultConfig it reads no files
// and links no SSO, STS or IMDS client: 1.6 MiB less in the bootstrap.
func LambdaConfig(getenv func(string) string) aws.Config {
	cfg := aws.Config{Region: getenv("AWS_REGION"), Credentials: credentials.NewStaticCredentialsProvider(
		getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"), getenv("AWS_SESSION_TOKEN"))}
	if n, err := strconv.Atoi(getenv("AWS_MAX_ATTEMPTS")); err == nil && n > 0 {
		cfg.RetryMaxAttempts = n
	}
	return cfg
}

// FromEnv is the Config of the Lambda function's environment.
func FromEnv(env *fnlambda.Env) Config {
	return Config{Table: env.Table, DynamoEndpoint: env.DynamoEndpoint, Function: env.WorkerFunction,
		LambdaEndpoint: env.LambdaEndpoint, KMSKeys: env.Keys, KMSEndpoint: env.KMSEndpoint,
		FunctionMaxEventAge: env.WorkerMaxEventAge}
}

// Function builds the Lambda function of env (functions/lambda's LoadEnv
// reads it): in worker mode a [fnlambda.Handler] whose worker runs reg's
// handlers under env's destination policy (closed unless the function's
// environment allows destinations) and opens inline configuration with the KMS keyring (env's
// ConfigEnv is the allowlist) and reads variables and writes results over
// the inline limits through the presigned URLs the host seals into each
// invocation (functions.Worker.PayloadURLs: net/http and the keyring, no
// S3 client); in reconciler mode the same handler with an
// engine factory launching on env's worker function, which grants each
// attempt it launches the payload URLs of env's PayloadBucket and
// deletes the objects of the runs its retention expires (see
// payloadURLs); in trigger mode the rules of env's TriggerRules routing
// events to runs of agents, launched with the same payload URLs. The host
// stays open for the life of the process. A configuration error is a
// [*sortie.ValidationError] naming the environment variable.
func Function(ctx context.Context, env *fnlambda.Env, reg *functions.Registry, agents sortie.AgentCatalog, log *slog.Logger) (Handler, error) {
	h, err := OpenWith(ctx, LambdaConfig(os.Getenv), FromEnv(env))
	if err != nil {
		return nil, envError(err)
	}
	if env.Mode == fnlambda.ModeTrigger {
		return h.triggerHandler(env, agents, log)
	}
	w := &functions.Worker{Registry: reg, Logger: log, Destinations: env.Destinations, Models: env.Models, ConfigRefs: h.configRefs(env)}
	w.SetAllowlists(env.AllowTools, env.AllowConnections)
	if s := h.Sealer(); s != nil {
		w.InlineConfig = &functions.InlineConfig{Opener: s, Allow: env.ConfigEnv}
		w.StepSealer = s
		// Payloads by reference: the host's presigned URLs, sealed into
		// each invocation, and the payloads sealed with the keyring.
		w.PayloadURLs = s
	}
	fh := &fnlambda.Handler{Mode: env.Mode, Worker: w, ControlPlane: h.ControlPlane, Logger: log, Retention: env.Retention}
	if env.Mode == fnlambda.ModeReconciler && env.WorkerFunction != "" {
		l, err := h.Launcher()
		if err != nil {
			return nil, envError(err)
		}
		opts := sortie.EngineOptions{Logger: log}
		if err := h.payloadURLs(env, &opts); err != nil {
			return nil, envError(err)
		}
		// The reconciler needs no agents: runs carry their manifest.
		fh.NewEngine = func() *sortie.Engine { return h.newEngine(l, sortie.Agents{}, opts) }
	}
	return func(ctx context.Context, event json.RawMessage) (any, error) {
		resp, err := fh.Invoke(ctx, event)
		if err != nil {
			return nil, err
		}
		return resp, nil
	}, nil
}

// triggerHandler is the trigger mode's handler: env's rules route events
// to runs of agents, launched on env's worker function; with env's
// PayloadBucket each attempt is granted its payload URLs (payloadURLs),
// so its worker writes a result over the inline limit by reference. The
// trigger holds no store to write variables to: an event whose
// variables are over sortie.MaxVariablesBytes is rejected at submit,
// naming the limit.
func (h *Host) triggerHandler(env *fnlambda.Env, agents sortie.AgentCatalog, log *slog.Logger) (Handler, error) {
	rules, err := triggers.LoadRules(env.TriggerRules)
	if err == nil {
		err = rules.CheckConfigRefs(env.ConfigRefs)
	}
	if err != nil {
		return nil, fmt.Errorf("awshost: %s: %w", fnlambda.EnvTriggerRules, err)
	}
	opts := sortie.EngineOptions{Logger: log, Models: env.Models}
	if env.ConfigRefs != nil {
		opts.ConfigRefs = env.ConfigRefs
	}
	if err := h.payloadURLs(env, &opts); err != nil {
		return nil, envError(err)
	}
	engine, err := h.Engine(agents, opts)
	if err != nil {
		return nil, envError(err)
	}
	router := triggers.NewRouter(rules, engine, &triggers.Options{Logger: log})
	return fnlambda.TriggerHandler(router, engine, log), nil
}

// newEngine is an engine over the control plane launching with l, sealing
// with opts.Sealer, else with the keyring when there is one.
func (h *Host) newEngine(l *lambdalauncher.Launcher, agents sortie.AgentCatalog, opts sortie.EngineOptions) *sortie.Engine {
	if s := h.Sealer(); s != nil && opts.Sealer == nil {
		opts.Sealer = s
	}
	return sortie.NewEngine(h.ControlPlane, l, agents, &opts)
}

// envNames are the variables of the Config fields whose errors Function
// returns.
var envNames = map[string]string{"Table": fnlambda.EnvTable, "Function": fnlambda.EnvWorkerFunction,
	"payload_bucket": fnlambda.EnvPayloadBucket}

// envError renames a [*sortie.ValidationError] naming a Config field after
// its environment variable.
func envError(err error) error {
	var ve *sortie.ValidationError
	if errors.As(err, &ve) {
		if name, ok := envNames[ve.Field]; ok {
			return sortie.Invalidf(name, "%s", ve.Reason)
		}
	}
	return err
}

// configRefs is env's allowlist of configuration references with the
// function's Secrets Manager (nil without an allowlist).
func (h *Host) configRefs(env *fnlambda.Env) *functions.ConfigRefs {
	if env.ConfigRefs == nil {
		return nil
	}
	refs := *env.ConfigRefs
	refs.Secrets = map[string]functions.SecretSource{
		functions.SourceAWSSecret: awssecrets.New(secretsmanager.NewFromConfig(h.aws, func(o *secretsmanager.Options) {
			o.BaseEndpoint = endpoint(env.SecretsManagerEndpoint)
		})),
	}
	return &refs
}
