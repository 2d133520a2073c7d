package lambda

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/keyring"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/payload/sealed"
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
	// EnvWorkerMaxEventAge is the worker function's maximum event age in
	// seconds (its asynchronous invocation configuration), which the
	// launcher adds to a run's start timeout. Optional; defaults to 21600
	// (6 hours, Lambda's default).
	EnvWorkerMaxEventAge = "SORTIE_WORKER_MAX_EVENT_AGE_S"
	// EnvLambdaEndpoint overrides the Lambda endpoint URL. Optional.
	EnvLambdaEndpoint = "SORTIE_LAMBDA_ENDPOINT"
	// EnvLogLevel is debug, info, warn or error. Optional; defaults to info.
	EnvLogLevel = "SORTIE_LOG_LEVEL"
	// EnvConfigRefs is the allowlist of configuration references
	// (functions.LoadConfigRefs): the path of its file in the deployment
	// package, or the JSON document itself (the terraform module sets
	// that). Optional; without it every reference is refused.
	EnvConfigRefs = "SORTIE_CONFIG_REFS"
	// EnvSecretsManagerEndpoint overrides the Secrets Manager endpoint URL
	// of "aws_secret" references. Optional.
	EnvSecretsManagerEndpoint = "SORTIE_SECRETSMANAGER_ENDPOINT"
	// EnvTriggerRules is the path of the trigger rules file in the
	// deployment package (host configuration, never from an event).
	// Required in trigger mode.
	EnvTriggerRules = "SORTIE_TRIGGER_RULES"
	// EnvPayloadBucket is the payload store's bucket URL, as hosts take
	// it (s3://BUCKET?region=REGION, terraform/aws's payload_bucket_url):
	// in reconciler and trigger mode, the attempts the function launches
	// are granted presigned URLs of their objects (package
	// payload/s3presign signs them with the function's credentials),
	// sealed with the keyring, and the reconciler's retention
	// ([EnvRetention]) deletes an expired run's objects through DELETE
	// URLs it signs. Optional; without it they get none: an attempt of a
	// run that keeps payloads by reference fails with error type
	// "payload", a result over the inline limit fails its attempt, and
	// expired runs' objects are left to the bucket's lifecycle rule. It
	// needs [EnvKMSKeys].
	EnvPayloadBucket = "SORTIE_PAYLOAD_BUCKET"
	// EnvMaxPayloadBytes is the payload store's per-payload maximum in
	// bytes, 1 to 1 GiB: the hosts' --max-payload-bytes. Optional;
	// defaults to sortie.DefaultMaxPayloadBytes.
	EnvMaxPayloadBytes = "SORTIE_MAX_PAYLOAD_BYTES"
	// EnvRetention is the reconciler's retention, the hosts' variable
	// (sortie.EnvRetention; a literal, which terraform's test reads): a
	// Go duration such as "720h"; each scheduled reconcile then deletes
	// the terminal runs last updated longer ago, and their payload
	// objects with [EnvPayloadBucket]. Optional; unset keeps runs
	// forever.
	EnvRetention = "SORTIE_RETENTION"
)

// Env is the function's configuration, read from the environment by [LoadEnv].
type Env struct {
	Mode, Table, DynamoEndpoint, KMSEndpoint, WorkerFunction, LambdaEndpoint string
	TriggerRules                                                             string
	// Keys are the keyring's (ID, key ARN) pairs, primary first.
	Keys      [][2]string
	ConfigEnv []string
	LogLevel  slog.Level
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
	// WorkerMaxEventAge is [EnvWorkerMaxEventAge]; 0 means the default.
	WorkerMaxEventAge time.Duration
	// Retention is [EnvRetention]; 0 keeps runs forever.
	Retention time.Duration
	// ConfigRefs is the allowlist of configuration references of
	// [EnvConfigRefs] (its Secrets not set), nil without one;
	// SecretsManagerEndpoint overrides the Secrets Manager endpoint.
	ConfigRefs             *functions.ConfigRefs
	SecretsManagerEndpoint string
	// PayloadBucket is [EnvPayloadBucket]; MaxPayloadBytes is
	// [EnvMaxPayloadBytes], 0 for the default.
	PayloadBucket   string
	MaxPayloadBytes int64
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
	e.ConfigEnv = functions.ParseAllow(getenv(EnvConfigEnv))
	if e.Retention, err = sortie.ParseRetention(EnvRetention, getenv(EnvRetention)); err != nil {
		return nil, err
	}
	if e.WorkerMaxEventAge, err = ParseMaxEventAge(EnvWorkerMaxEventAge, getenv(EnvWorkerMaxEventAge)); err != nil {
		return nil, err
	}
	if lvl := getenv(EnvLogLevel); lvl != "" {
		if err := e.LogLevel.UnmarshalText([]byte(lvl)); err != nil {
			return nil, sortie.Invalidf(EnvLogLevel, "%q is not debug, info, warn or error", lvl)
		}
	}
	if e.Destinations, err = destination.FromEnv(getenv); err != nil {
		return nil, err
	}
	if e.Models, err = sortie.ModelPolicyFromEnv(getenv); err != nil {
		return nil, err
	}
	e.AllowTools, e.AllowConnections = functions.ParseAllow(getenv(functions.EnvAllowTools)), functions.ParseAllow(getenv(functions.EnvAllowConnections))
	e.SecretsManagerEndpoint = getenv(EnvSecretsManagerEndpoint)
	if v := getenv(EnvConfigRefs); v != "" {
		if e.ConfigRefs, err = functions.LoadConfigRefs(v); err != nil {
			return nil, sortie.Invalidf(EnvConfigRefs, "%v", err)
		}
	}
	if err := e.loadPayloads(getenv); err != nil {
		return nil, err
	}
	return e, nil
}

// loadPayloads reads [EnvPayloadBucket] and [EnvMaxPayloadBytes]: a
// bucket needs the keyring, which seals the URLs granted for it.
func (e *Env) loadPayloads(getenv func(string) string) error {
	e.PayloadBucket = getenv(EnvPayloadBucket)
	if e.PayloadBucket != "" && len(e.Keys) == 0 {
		return sortie.Invalidf(EnvPayloadBucket, "needs %s: the keyring the workers hold seals the URLs granted for the bucket", EnvKMSKeys)
	}
	if v := getenv(EnvMaxPayloadBytes); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > sealed.MaxPayloadBytes {
			return sortie.Invalidf(EnvMaxPayloadBytes, "%.40q must be 1..%d bytes", v, sealed.MaxPayloadBytes)
		}
		e.MaxPayloadBytes = n
	}
	return nil
}

// ParseMaxEventAge parses a maximum event age in seconds, as
// [EnvWorkerMaxEventAge] holds it: 60..21600 (Lambda's
// MaximumEventAgeInSeconds range); "" is 0, the default. Other values get a
// [*sortie.ValidationError] naming field.
func ParseMaxEventAge(field, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	secs, err := strconv.Atoi(v)
	if err != nil || secs < 60 || secs > 21600 {
		return 0, sortie.Invalidf(field, "%q must be 60..21600 seconds (Lambda's MaximumEventAgeInSeconds)", v)
	}
	return time.Duration(secs) * time.Second, nil
}

// ParseKMSKeys parses a keyring value, "ID=KEY[,ID=KEY]" with KMS key
// ARNs (or IDs or aliases), the first primary, as [EnvKMSKeys] holds it:
// [keyring.ParseList]. An empty v is no keys. An entry that is not ID=KEY
// gets a [*sortie.ValidationError] naming field.
func ParseKMSKeys(field, v string) ([][2]string, error) {
	return keyring.ParseList(field, v)
}
