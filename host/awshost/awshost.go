package awshost

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/sortie-run/sortie/crypto/awskms"
	"github.com/sortie-run/sortie/crypto/envelope"
	lambdalauncher "github.com/sortie-run/sortie/launchers/lambda"
	"github.com/sortie-run/sortie/pricing"
)

// Config names a host's AWS resources. Errors about a field name it as
// written here ("Function", "KMSKeys").
type Config struct {
	// Table is the DynamoDB control plane's table. Required.
	Table string
	// DynamoEndpoint overrides the DynamoDB endpoint URL (for example
	// DynamoDB Local's). Optional; defaults to the region's.
	DynamoEndpoint string
	// Function is the worker Lambda function attempts are launched on, a
	// name or ARN. Optional; without it [Host.Engine] and [Host.Launcher]
	// refuse.
	Function string
	// LambdaEndpoint overrides the Lambda endpoint URL. Optional; defaults
	// to the region's.
	LambdaEndpoint string
	// FunctionMaxEventAge is Function's maximum event age (its
	// asynchronous invocation configuration), which the engine adds to a
	// run's start timeout. Optional; defaults to 6 h, Lambda's default.
	FunctionMaxEventAge time.Duration
	// KMSKeys is the keyring of inline configuration: (key ID, KMS key ARN,
	// ID or alias) pairs, the primary first, as functions/lambda's
	// ParseKMSKeys reads them. Optional; without keys [Host.Sealer] is nil
	// and inline configuration is off.
	KMSKeys [][2]string
	// KMSEndpoint overrides the KMS endpoint URL. Optional; defaults to the
	// region's.
	KMSEndpoint string
	// Credentials are the AWS credentials of every client, for example
	// host/gcphost's AWSCredentials (workload identity federation from
	// Google Cloud). Optional; defaults to the SDK's usual sources.
	Credentials aws.CredentialsProvider
	// PageTokenKey signs the control plane's page tokens
	// (dynamo.Options.PageTokenKey), the same in every process of the
	// deployment ([EnvPageTokenKey], [ParsePageTokenKey]). Optional; without
	// it or SealedPageTokenKey a page token is good only in this process,
	// which is enough for the worker function and not for a host serving
	// lists ([Host.SharedPageTokens]).
	PageTokenKey []byte
	// SealedPageTokenKey is the page-token key sealed by the deployment's
	// KMS key ([EnvPageTokenKeySealed]); Open decrypts it once. Optional.
	SealedPageTokenKey []byte
}

// Host is the opened AWS parts of a [Config].
type Host struct {
	cfg Config
	aws aws.Config
	kms *kms.Client
	// ControlPlane is the DynamoDB control plane of Config.Table.
	ControlPlane *dynamo.ControlPlane
	keeper       *envelope.Keeper
}

// Open loads the AWS configuration and opens the control plane of
// cfg.Table and the keyring of cfg.KMSKeys. It makes no AWS call but a
// KMS Decrypt of cfg.SealedPageTokenKey. It returns a
// [*sortie.ValidationError] naming Table when it is empty (PageTokenKey
// for a key too short, or both forms set), or wraps the keyring's or
// KMS's error; the caller closes the host.
func Open(ctx context.Context, cfg Config) (*Host, error) {
	if cfg.Table == "" {
		return nil, sortie.Invalidf("Table", "the DynamoDB table is required")
	}
	var opts []func(*config.LoadOptions) error
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("awshost: load the AWS configuration: %w", err)
	}
	return OpenWith(ctx, awsCfg, cfg)
}

// OpenWith is [Open] with the AWS configuration given instead of loaded
// (see [LambdaConfig]); cfg.Credentials, when set, replaces its
// credentials. It links none of the SDK's configuration loading (shared
// config files, SSO, IMDS), which a Lambda function does not need.
func OpenWith(ctx context.Context, awsCfg aws.Config, cfg Config) (*Host, error) {
	if cfg.Table == "" {
		return nil, sortie.Invalidf("Table", "the DynamoDB table is required")
	}
	if cfg.Credentials != nil {
		awsCfg.Credentials = cfg.Credentials
	}
	h := &Host{cfg: cfg, aws: awsCfg}
	h.kms = kms.NewFromConfig(awsCfg, func(o *kms.Options) { o.BaseEndpoint = endpoint(cfg.KMSEndpoint) })
	key, err := h.pageTokenKey(ctx)
	if err != nil {
		return nil, err
	}
	db, liveness := dynamoClients(awsCfg, cfg.DynamoEndpoint)
	if h.ControlPlane, err = dynamo.New(db, cfg.Table, &dynamo.Options{PageTokenKey: key, Liveness: liveness, MaxInFlight: maxInFlight}); err != nil {
		return nil, fmt.Errorf("awshost: control plane: %w", err)
	}
	prices, err := pricing.FromEnv(os.Getenv) // a host sets its own table afterwards
	if err != nil {
		h.ControlPlane.Close()
		return nil, err
	}
	h.ControlPlane.SetPricer(prices)
	if h.keeper, err = h.openKeyring(); err != nil {
		h.ControlPlane.Close()
		return nil, err
	}
	return h, nil
}

// The retry budgets of the DynamoDB clients: standard mode (never
// adaptive: its client-side rate limiter kept most calls waiting for about
// 30 s after throttling had stopped), backoff capped so a throttled call
// is answered within seconds.
const (
	maxBackoff         = time.Second
	livenessMaxBackoff = 500 * time.Millisecond
	livenessAttempts   = 5
	// maxInFlight bounds a host's DynamoDB calls in flight but the
	// liveness client's, so DynamoDB never queues more than that ahead
	// of a heartbeat.
	maxInFlight = 64
)

// dynamoClients returns the host's two DynamoDB clients, each with a
// retryer of its own: db for submissions, reads and the reconciler (3
// attempts and the standard retry quota, so a throttled submission soon
// ends in sortie.ErrThrottled, HTTP 429), and liveness for the calls that
// keep attempts alive (5 attempts and no client-side retry quota: only
// DynamoDB's answers slow them, never a burst of submissions).
func dynamoClients(awsCfg aws.Config, url string) (db, liveness *dynamodb.Client) {
	normal := retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = maxBackoff })
	live := retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts, o.MaxBackoff, o.RateLimiter = livenessAttempts, livenessMaxBackoff, ratelimit.None
	})
	client := func(r aws.Retryer) *dynamodb.Client {
		return dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint, o.Retryer = endpoint(url), r })
	}
	return client(normal), client(live)
}

func endpoint(url string) *string {
	if url == "" {
		return nil
	}
	return aws.String(url)
}

// openKeyring returns the keeper of cfg.KMSKeys, or nil without keys.
func (h *Host) openKeyring() (*envelope.Keeper, error) {
	ring, err := envelope.KeyringOf(h.cfg.KMSKeys, func(arn string) (envelope.KEK, error) { return awskms.New(h.kms, arn) })
	if err != nil {
		return nil, fmt.Errorf("awshost: KMSKeys: %w", err)
	}
	if ring == nil {
		return nil, nil
	}
	return envelope.New(ring, &envelope.Options{Cache: &envelope.CacheOptions{}}), nil
}

// Sealer returns the keyring's configuration sealer and opener (the
// engine's [sortie.EngineOptions.Sealer], the worker's inline
// configuration opener), or nil when Config.KMSKeys is empty.
func (h *Host) Sealer() *envelope.Config {
	if h.keeper == nil {
		return nil
	}
	return envelope.NewConfig(h.keeper)
}

// Launcher returns the Lambda launcher of Config.Function, or a
// [*sortie.ValidationError] naming Function when it is empty.
func (h *Host) Launcher() (*lambdalauncher.Launcher, error) {
	if h.cfg.Function == "" {
		return nil, sortie.Invalidf("Function", "the worker function attempts are launched on is required")
	}
	client := awslambda.NewFromConfig(h.aws, func(o *awslambda.Options) { o.BaseEndpoint = endpoint(h.cfg.LambdaEndpoint) })
	l, err := lambdalauncher.New(client, lambdalauncher.Options{Function: h.cfg.Function, Region: h.aws.Region,
		MaxEventAge: h.cfg.FunctionMaxEventAge})
	if err != nil {
		return nil, fmt.Errorf("awshost: Function: %w", err)
	}
	return l, nil
}

// Engine returns an engine over the control plane that launches attempts
// on Config.Function and resolves agent names with agents. With KMS keys
// and no opts.Sealer, opts.Sealer becomes the keyring's [Host.Sealer];
// otherwise opts is used as given. It returns a [*sortie.ValidationError] naming Function when
// Config.Function is empty. The caller closes the engine before the host.
func (h *Host) Engine(agents sortie.AgentCatalog, opts sortie.EngineOptions) (*sortie.Engine, error) {
	l, err := h.Launcher()
	if err != nil {
		return nil, err
	}
	return h.newEngine(l, agents, opts), nil
}

// AWS returns the AWS configuration the host's clients use.
func (h *Host) AWS() aws.Config { return h.aws }

// SharedPageTokens reports whether the control plane's page tokens are
// signed with a configured key, and so are taken by every process of the
// deployment; without one a host must not serve lists to clients.
func (h *Host) SharedPageTokens() bool {
	return h.cfg.PageTokenKey != nil || h.cfg.SealedPageTokenKey != nil
}

// Close closes the control plane.
func (h *Host) Close() error { return h.ControlPlane.Close() }
