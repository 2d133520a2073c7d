package gcphost_test

import (
	"context"
	"log"
	"log/slog"
	"net"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/host/gcphost"
)

// The Cloud Run container's service mode, as cmd/sortie-cloudrun runs it.
func ExampleNewService() {
	ctx := context.Background()
	env, err := fncloudrun.LoadEnv(os.Getenv)
	if err != nil {
		log.Fatal(err)
	}
	c, err := gcphost.OpenContainer(ctx, env, builtin.Registry(), slog.Default())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	svc, err := gcphost.NewService(ctx, env, c, builtin.Agents(), slog.Default())
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close()
	ln, err := net.Listen("tcp", ":"+env.Port)
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(svc.Serve(ctx, ln))
}

// A process on Google Cloud reaching DynamoDB as an IAM role, with no AWS
// key stored: the role trusts accounts.google.com for the service
// account's unique ID (terraform/aws's cloudrun_worker_role_arn output).
func ExampleAWSCredentials() {
	ctx := context.Background()
	stsCfg, err := config.LoadDefaultConfig(ctx) // region from AWS_REGION
	if err != nil {
		log.Fatal(err)
	}
	creds, err := gcphost.AWSCredentials(stsCfg, gcphost.AWSFederation{
		RoleARN: "arn:aws:iam::111122223333:role/sortie-cloudrun-worker",
	})
	if err != nil {
		log.Fatal(err)
	}
	h, err := awshost.Open(ctx, awshost.Config{Table: "sortie-runs", Credentials: creds})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
}

// A host launching attempts on the Cloud Run Job, sealing each attempt's
// configuration with the Cloud KMS keyring the job's containers open it
// with (their SORTIE_KMS_KEYS); the names are terraform/gcp's outputs.
// Package host does this for sortie serve (--cloudrun-job, --gcp-kms-keys).
func ExampleOpen() {
	ctx := context.Background()
	g, err := gcphost.Open(ctx, gcphost.Config{
		Job:     "projects/my-project/locations/europe-west1/jobs/sortie-worker",
		KMSKeys: [][2]string{{"gcp-1", "projects/my-project/locations/europe-west1/keyRings/sortie-keyring/cryptoKeys/sortie-config"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	cp, err := sqlite.Open("sortie.db", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	engine := sortie.NewEngine(cp, g.Launcher(), builtin.Agents(), &sortie.EngineOptions{Sealer: g.Sealer()})
	defer engine.Close()
}
