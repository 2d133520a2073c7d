package lambda

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/sortie-run/sortie/crypto/awskms"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/functions"
	lambdalauncher "github.com/sortie-run/sortie/launchers/lambda"
)

// The environment variables the function reads (the terraform module sets
// them). Region and credentials are the SDK's usual ones (AWS_REGION and
// the execution role).
const (
	// EnvMode is [ModeWorker], [ModeReconciler] or [ModeTrigger]. Optional;
	// defaults to worker.
	EnvMode = "SORTIE_LAMBDA_MODE"
	// EnvTable is the DynamoDB control plane's table. Required.
	EnvTable = "SORTIE_DYNAMODB_TABLE"
	// EnvDynamoEndpoint overrides the DynamoDB endpoint URL. Optional.
	EnvDynamoEndpoint = "SORTIE_DYNAMODB_ENDPOINT"
	// EnvKMSKeys is the keyring of inline configuration: "ID=KEY[,ID=KEY]"
	// with KMS key ARNs; the first is primary. Optional; without it inline
	// configuration is off.
	EnvKMSKeys = "SORTIE_KMS_KEYS"
	// EnvKMSEndpoint overrides the KMS endpoint URL. Optional.
	EnvKMSEndpoint = "SORTIE_KMS_ENDPOINT"
	// EnvConfigEnv is the inline configuration's environment allowlist,
	// comma-separated names. Optional; defaults to none (every
	// configuration is refused).
	EnvConfigEnv = "SORTIE_CONFIG_ENV"
	// EnvWorkerFunction is the worker function the reconciler relaunches
	// attempts on. Required for scheduled events in reconciler mode.
	EnvWorkerFunction = "SORTIE_WORKER_FUNCTION"
	// EnvLambdaEndpoint overrides the Lambda endpoint URL. Optional.
	EnvLambdaEndpoint = "SORTIE_LAMBDA_ENDPOINT"
	// EnvLogLevel is debug, info, warn or error. Optional; defaults to info.
	EnvLogLevel = "SORTIE_LOG_LEVEL"
	// EnvTriggerRules is the path of the trigger rules file in the
	// deployment package (host configuration, never from an event).
	// Required in trigger mode.
	EnvTriggerRules = "SORTIE_TRIGGER_RULES"
)

// Env is the function's configuration, read from the environment by [LoadEnv].
type Env struct {
	Mode, Table, DynamoEndpoint, KMSEndpoint, WorkerFunction, LambdaEndpoint string
	TriggerRules                                                             string
	// Keys are the keyring's (ID, key ARN) pairs, primary first.
	Keys      [][2]string
	ConfigEnv []string
	LogLevel  slog.Level
}

// LoadEnv reads the Env* variables through getenv (os.Getenv) and
// validates them, returning a [*sortie.ValidationError] naming the variable.
func LoadEnv(getenv func(string) string) (*Env, error) {
	e := &Env{Mode: getenv(EnvMode), Table: getenv(EnvTable), DynamoEndpoint: getenv(EnvDynamoEndpoint),
		KMSEndpoint: getenv(EnvKMSEndpoint), WorkerFunction: getenv(EnvWorkerFunction), LambdaEndpoint: getenv(EnvLambdaEndpoint),
		TriggerRules: getenv(EnvTriggerRules)}
	if e.Mode == "" {
		e.Mode = ModeWorker
	}
	if e.Mode != ModeWorker && e.Mode != ModeReconciler && e.Mode != ModeTrigger {
		return nil, sortie.Invalidf(EnvMode, "%q must be %q, %q or %q", e.Mode, ModeWorker, ModeReconciler, ModeTrigger)
	}
	if e.Mode == ModeTrigger && (e.TriggerRules == "" || e.WorkerFunction == "") {
		return nil, sortie.Invalidf(EnvTriggerRules, "trigger mode needs %s (the rules file) and %s", EnvTriggerRules, EnvWorkerFunction)
	}
	if e.Table == "" {
		return nil, sortie.Invalidf(EnvTable, "the DynamoDB table is required")
	}
	keys, err := ParseKMSKeys(EnvKMSKeys, getenv(EnvKMSKeys))
	if err != nil {
		return nil, err
	}
	e.Keys = keys
	for _, name := range strings.Split(getenv(EnvConfigEnv), ",") {
		if name = strings.TrimSpace(name); name != "" {
			e.ConfigEnv = append(e.ConfigEnv, name)
		}
	}
	if lvl := getenv(EnvLogLevel); lvl != "" {
		if err := e.LogLevel.UnmarshalText([]byte(lvl)); err != nil {
			return nil, sortie.Invalidf(EnvLogLevel, "%q is not debug, info, warn or error", lvl)
		}
	}
	return e, nil
}

// ParseKMSKeys parses a keyring value, "ID=KEY[,ID=KEY]" with KMS key
// ARNs (or IDs or aliases), the first primary, as [EnvKMSKeys] holds it.
// An empty v is no keys. An entry that is not ID=KEY gets a
// [*sortie.ValidationError] naming field.
func ParseKMSKeys(field, v string) ([][2]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var keys [][2]string
	for _, kv := range strings.Split(v, ",") {
		id, key, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || id == "" || key == "" {
			return nil, sortie.Invalidf(field, "%q is not ID=KEY_ARN", kv)
		}
		keys = append(keys, [2]string{id, key})
	}
	return keys, nil
}

// Handler builds the function's handler: the DynamoDB control plane, the
// KMS keyring, the worker with reg's handlers and, in reconciler mode, the
// engine factory over a Lambda launcher of [EnvWorkerFunction].
func (e *Env) Handler(ctx context.Context, reg *functions.Registry, log *slog.Logger) (*Handler, error) {
	cfg, cp, keeper, err := e.open(ctx)
	if err != nil {
		return nil, err
	}
	w := &functions.Worker{Registry: reg, Logger: log}
	if keeper != nil {
		w.InlineConfig = &functions.InlineConfig{Opener: envelope.NewConfig(keeper), Allow: e.ConfigEnv}
	}
	h := &Handler{Mode: e.Mode, Worker: w, ControlPlane: cp, Logger: log}
	if e.Mode == ModeReconciler && e.WorkerFunction != "" {
		if h.NewEngine, err = e.engineFactory(cfg, cp, keeper, sortie.Agents{}, log); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// ControlPlane loads the AWS configuration (region and credentials the
// SDK's usual way: AWS_REGION, the AWS_* variables, shared files, the task
// or instance role) and opens the DynamoDB control plane of Table, at
// DynamoEndpoint when set. It is for hosts outside the function that only
// read and change runs (sortie get, list, cancel on the table); the caller
// closes it.
func (e *Env) ControlPlane(ctx context.Context) (*dynamo.ControlPlane, error) {
	cfg, err := loadConfig(ctx)
	if err != nil {
		return nil, err
	}
	return e.controlPlane(cfg)
}

// Engine opens the DynamoDB control plane of Table and returns it with an
// engine over it that launches attempts on WorkerFunction through the
// Lambda launcher (at LambdaEndpoint when set) and resolves agent names
// with agents: the host of a long-lived process outside Lambda, such as
// sortie serve in a container. With Keys set, opts.Sealer becomes the KMS
// keyring's sealer (inline configuration on); otherwise opts is used as
// given. The caller closes the engine, then the control plane. It returns a
// [*sortie.ValidationError] naming [EnvWorkerFunction] when WorkerFunction
// is empty.
func (e *Env) Engine(ctx context.Context, agents sortie.AgentCatalog, opts sortie.EngineOptions) (*sortie.Engine, *dynamo.ControlPlane, error) {
	if e.WorkerFunction == "" {
		return nil, nil, sortie.Invalidf(EnvWorkerFunction, "the worker function attempts are launched on is required")
	}
	cfg, cp, keeper, err := e.open(ctx)
	if err != nil {
		if cp != nil {
			cp.Close()
		}
		return nil, nil, err
	}
	l, err := e.launcher(cfg)
	if err != nil {
		cp.Close()
		return nil, nil, err
	}
	if keeper != nil {
		opts.Sealer = envelope.NewConfig(keeper)
	}
	return sortie.NewEngine(cp, l, agents, &opts), cp, nil
}

// open loads the AWS configuration and opens the DynamoDB control plane
// and the keyring's keeper (nil without keys).
func (e *Env) open(ctx context.Context) (aws.Config, *dynamo.ControlPlane, *envelope.Keeper, error) {
	cfg, err := loadConfig(ctx)
	if err != nil {
		return cfg, nil, nil, err
	}
	cp, err := e.controlPlane(cfg)
	if err != nil {
		return cfg, nil, nil, err
	}
	keeper, err := e.keeper(cfg)
	return cfg, cp, keeper, err
}

func loadConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return cfg, fmt.Errorf("lambda: load the AWS configuration: %w", err)
	}
	return cfg, nil
}

func (e *Env) controlPlane(cfg aws.Config) (*dynamo.ControlPlane, error) {
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = endpoint(e.DynamoEndpoint) })
	cp, err := dynamo.New(db, e.Table, nil)
	if err != nil {
		return nil, fmt.Errorf("lambda: control plane: %w", err)
	}
	return cp, nil
}

func endpoint(url string) *string {
	if url == "" {
		return nil
	}
	return aws.String(url)
}

// keeper returns the keyring's keeper, or nil when no keys are set.
func (e *Env) keeper(cfg aws.Config) (*envelope.Keeper, error) {
	var ring *envelope.Keyring
	client := kms.NewFromConfig(cfg, func(o *kms.Options) { o.BaseEndpoint = endpoint(e.KMSEndpoint) })
	for _, k := range e.Keys {
		kek, err := awskms.New(client, k[1])
		if err != nil {
			return nil, fmt.Errorf("lambda: %s key %s: %w", EnvKMSKeys, k[0], err)
		}
		if ring == nil {
			ring, err = envelope.NewKeyring(k[0], kek)
		} else {
			err = ring.Add(k[0], kek)
		}
		if err != nil {
			return nil, fmt.Errorf("lambda: %s: %w", EnvKMSKeys, err)
		}
	}
	if ring == nil {
		return nil, nil
	}
	return envelope.New(ring, &envelope.Options{Cache: &envelope.CacheOptions{}}), nil
}

// engineFactory returns a factory of engines that launch attempts on
// [EnvWorkerFunction] and resolve agent names with agents (the reconciler
// needs none: runs carry their manifest).
func (e *Env) engineFactory(cfg aws.Config, cp sortie.ControlPlane, keeper *envelope.Keeper, agents sortie.AgentCatalog, log *slog.Logger) (func() *sortie.Engine, error) {
	l, err := e.launcher(cfg)
	if err != nil {
		return nil, err
	}
	opts := &sortie.EngineOptions{Logger: log}
	if keeper != nil {
		opts.Sealer = envelope.NewConfig(keeper)
	}
	return func() *sortie.Engine { return sortie.NewEngine(cp, l, agents, opts) }, nil
}

// launcher returns the Lambda launcher of [EnvWorkerFunction].
func (e *Env) launcher(cfg aws.Config) (*lambdalauncher.Launcher, error) {
	client := awslambda.NewFromConfig(cfg, func(o *awslambda.Options) { o.BaseEndpoint = endpoint(e.LambdaEndpoint) })
	l, err := lambdalauncher.New(client, lambdalauncher.Options{Function: e.WorkerFunction, Region: cfg.Region})
	if err != nil {
		return nil, fmt.Errorf("lambda: %s: %w", EnvWorkerFunction, err)
	}
	return l, nil
}
