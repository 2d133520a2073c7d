package gcphost

import (
	"context"
	"fmt"

	cloudrunapi "cloud.google.com/go/run/apiv2"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/launchers/cloudrun"
)

// ControlPlane is the container's control plane, closed when it exits.
type ControlPlane interface {
	sortie.ControlPlane
	Close() error
}

// OpenControlPlane opens the control plane env names: the DynamoDB table
// of [fncloudrun.EnvDynamoTable] (AWS credentials and region the SDK's
// usual way), else the SQLite file of [fncloudrun.EnvSQLitePath] — never
// one an invocation names.
func OpenControlPlane(ctx context.Context, env *fncloudrun.Env) (ControlPlane, error) {
	if env.DynamoTable != "" {
		h, err := awshost.Open(ctx, awshost.Config{Table: env.DynamoTable, DynamoEndpoint: env.DynamoEndpoint})
		if err != nil {
			return nil, fmt.Errorf("gcphost: open control plane: %w", err)
		}
		return h.ControlPlane, nil
	}
	cp, err := sqlite.Open(env.SQLitePath, nil)
	if err != nil {
		return nil, fmt.Errorf("gcphost: open control plane: %w", err)
	}
	return cp, nil
}

// OpenJobs opens the Cloud Run Admin API clients (credentials the
// client library's usual way) and returns the Jobs launcher of job, the
// full name "projects/PROJECT/locations/REGION/jobs/JOB", with a function
// that closes the clients. A job name the launcher refuses is a
// [*sortie.ValidationError].
func OpenJobs(ctx context.Context, job string) (*cloudrun.JobsLauncher, func(), error) {
	jobs, err := cloudrunapi.NewJobsClient(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("cloud run jobs client: %w", err)
	}
	execs, err := cloudrunapi.NewExecutionsClient(ctx)
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
