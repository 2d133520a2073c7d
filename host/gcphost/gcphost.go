package gcphost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"

	cloudrunapi "cloud.google.com/go/run/apiv2"
	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/functions"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/functions/gcpsecrets"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/launchers/cloudrun"
	"github.com/sortie-run/sortie/pricing"
)

// ControlPlane is the container's control plane, closed when it exits.
type ControlPlane interface {
	sortie.ControlPlane
	Close() error
}

// Container is the opened parts of the Cloud Run container of an [Env]:
// its control plane, its keyring and the worker that opens inline
// configuration with it, and reads variables and writes results over
// their inline limits through the presigned URLs the host seals into each
// invocation (functions.Worker.PayloadURLs).
//
// [Env]: https://pkg.go.dev/github.com/sortie-run/sortie/functions/cloudrun#Env
type Container struct {
	// ControlPlane is the container's own control plane, or nil without
	// one (attempts then report over the host's callbacks).
	ControlPlane ControlPlane
	// Keyring opens (and, on the trigger route, seals) inline
	// configuration; nil when it is off.
	Keyring *Keyring
	// Worker executes attempts with reg's handlers and, with a keyring,
	// opens their configuration (env's ConfigEnv is the allowlist).
	Worker *functions.Worker
}

// OpenContainer opens env's keyring and control plane and builds the
// worker of reg's handlers under env's destination policy (closed unless
// the environment allows destinations) and allowlist of configuration
// references (its "gcp_secret" ones read from Secret Manager, the client
// made when an attempt first needs it), logging to log (nil: slog.Default()). It makes
// no call to Cloud KMS or AWS. A bad keyring is a [*sortie.ValidationError]
// naming [fncloudrun.EnvKMSKeys]. The caller closes the container.
func OpenContainer(ctx context.Context, env *fncloudrun.Env, reg *functions.Registry, log *slog.Logger) (*Container, error) {
	if log == nil {
		log = slog.Default()
	}
	ring, err := OpenKeyring(ctx, env.KMSKeys, env.KMSEndpoint)
	if err != nil {
		return nil, envKeysError(err)
	}
	cp, err := OpenControlPlane(ctx, env)
	if err != nil {
		ring.Close()
		return nil, err
	}
	w := &functions.Worker{Registry: reg, Logger: log, Destinations: env.Destinations, Models: env.Models, ConfigRefs: configRefs(env)}
	w.SetAllowlists(env.AllowTools, env.AllowConnections)
	if ring != nil {
		// No StepSealer: a secret step fails here, saying so (the
		// worker's Encrypt grant in terraform/gcp is for results kept by
		// reference).
		w.InlineConfig = &functions.InlineConfig{Opener: ring.Config, Allow: env.ConfigEnv}
		// Payloads by reference, through the presigned URLs the host
		// seals into each invocation. Reading variables needs Decrypt;
		// storing a result seals it, which needs the key's Encrypt too.
		w.PayloadURLs = ring.Config
	}
	return &Container{ControlPlane: cp, Keyring: ring, Worker: w}, nil
}

// envKeysError names the variable of a keyring error.
func envKeysError(err error) error {
	var ve *sortie.ValidationError
	if errors.As(err, &ve) {
		return sortie.Invalidf(fncloudrun.EnvKMSKeys, "%v", err)
	}
	return err
}

// Close closes the control plane and the keyring.
func (c *Container) Close() error {
	var err error
	if c.ControlPlane != nil {
		err = c.ControlPlane.Close()
	}
	return errors.Join(err, c.Keyring.Close())
}

// OpenControlPlane opens the control plane env names: the DynamoDB table
// of [fncloudrun.EnvDynamoTable] (region from AWS_REGION; credentials from
// the role of [fncloudrun.EnvAWSRoleARN] assumed with the service
// account's ID token, see [AWSCredentials], else the SDK's usual sources),
// else the SQLite file of [fncloudrun.EnvSQLitePath] — never one an
// invocation names — else none (nil, nil).
func OpenControlPlane(ctx context.Context, env *fncloudrun.Env) (ControlPlane, error) {
	switch {
	case env.DynamoTable != "":
		cfg, err := awsConfig(ctx, env)
		if err != nil {
			return nil, err
		}
		h, err := awshost.Open(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("gcphost: open control plane: %w", err)
		}
		return h.ControlPlane, nil
	case env.SQLitePath != "":
		prices, err := pricing.FromEnv(os.Getenv)
		if err != nil {
			return nil, err
		}
		cp, err := sqlite.Open(env.SQLitePath, nil)
		if err != nil {
			return nil, fmt.Errorf("gcphost: open control plane: %w", err)
		}
		cp.SetPricer(prices)
		return cp, nil
	}
	return nil, nil
}

// awsConfig is the host/awshost configuration of env's table, with the
// federated credentials of env's role when it names one.
func awsConfig(ctx context.Context, env *fncloudrun.Env) (awshost.Config, error) {
	cfg := awshost.Config{Table: env.DynamoTable, DynamoEndpoint: env.DynamoEndpoint}
	if env.AWSRoleARN == "" {
		return cfg, nil
	}
	stsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return cfg, fmt.Errorf("gcphost: load the AWS configuration: %w", err)
	}
	fed := AWSFederation{RoleARN: env.AWSRoleARN, Audience: env.AWSTokenAudience}
	if env.Execution != "" {
		fed.SessionName = sessionName("sortie-" + path.Base(env.Execution))
	}
	cfg.Credentials, err = AWSCredentials(stsCfg, fed)
	return cfg, err
}

// OpenJobs opens the Cloud Run Admin API clients (credentials the
// client library's usual way) and returns the Jobs launcher of job, the
// full name "projects/PROJECT/locations/REGION/jobs/JOB", with a function
// that closes the clients. A job name the launcher refuses is a
// [*sortie.ValidationError].
func OpenJobs(ctx context.Context, job string) (*cloudrun.JobsLauncher, func(), error) {
	return openJobs(ctx, job, "")
}

// openJobs is OpenJobs through the Admin API at endpoint (see
// clientOptions).
func openJobs(ctx context.Context, job, endpoint string) (*cloudrun.JobsLauncher, func(), error) {
	jobs, err := cloudrunapi.NewJobsClient(ctx, clientOptions(endpoint)...)
	if err != nil {
		return nil, nil, fmt.Errorf("cloud run jobs client: %w", err)
	}
	execs, err := cloudrunapi.NewExecutionsClient(ctx, clientOptions(endpoint)...)
	if err != nil {
		jobs.Close()
		return nil, nil, fmt.Errorf("cloud run executions client: %w", err)
	}
	closeAll := func() { jobs.Close(); execs.Close() }
	l, err := cloudrun.NewJobs(jobs, execs, cloudrun.JobsOptions{Job: job})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return l, closeAll, nil
}

// configRefs is env's allowlist of configuration references with a
// Secret Manager source (nil without an allowlist).
func configRefs(env *fncloudrun.Env) *functions.ConfigRefs {
	if env.ConfigRefs == nil {
		return nil
	}
	refs := *env.ConfigRefs
	endpoint := env.SecretManagerEndpoint
	refs.Secrets = map[string]functions.SecretSource{
		functions.SourceGCPSecret: functions.LazySecretSource(func(ctx context.Context) (functions.SecretSource, error) {
			c, err := secretmanager.NewClient(ctx, clientOptions(endpoint)...)
			if err != nil {
				return nil, err
			}
			return gcpsecrets.New(c), nil
		}),
	}
	return &refs
}
