package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	fnlambda "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/host/awshost"
)

// The AWS host: with --dynamodb-table the commands keep runs in the
// DynamoDB control plane (controlplane/dynamo) instead of the embedded
// SQLite state, and with --lambda-function they launch attempts on the
// worker Lambda function (launchers/lambda; cmd/sortie-lambda, deployed by
// terraform/aws) instead of local worker subprocesses. Region and
// credentials come from the standard AWS configuration (AWS_REGION, the
// AWS_* variables, shared files, the task or instance role).

// awsFlags are the global flags of the AWS host; each defaults to the
// variable the Lambda function reads (functions/lambda Env*).
type awsFlags struct {
	table, dynamoEndpoint    string
	function, lambdaEndpoint string
	maxEventAge              string
	kmsKeys, kmsEndpoint     string
	keys                     [][2]string
	eventAge                 time.Duration
	// pageKey and sealedPageKey come from the environment only (a key on
	// a command line is visible to every user of the machine).
	pageKey, sealedPageKey []byte
}

func (a *awsFlags) register(f *pflag.FlagSet) {
	f.StringVar(&a.table, "dynamodb-table", os.Getenv(fnlambda.EnvTable),
		"keep runs in this DynamoDB control plane table (e.g. terraform/aws's table_name) instead of the embedded state; get, list, cancel and push need only this, commands that launch attempts also --lambda-function (env "+fnlambda.EnvTable+")")
	f.StringVar(&a.dynamoEndpoint, "dynamodb-endpoint", os.Getenv(fnlambda.EnvDynamoEndpoint),
		"DynamoDB endpoint URL, e.g. DynamoDB Local's (default: the region's; env "+fnlambda.EnvDynamoEndpoint+")")
	f.StringVar(&a.function, "lambda-function", os.Getenv(fnlambda.EnvWorkerFunction),
		"with --dynamodb-table: launch attempts on this worker Lambda function, name or ARN (terraform/aws's worker_function_name; env "+fnlambda.EnvWorkerFunction+")")
	f.StringVar(&a.maxEventAge, "lambda-max-event-age", os.Getenv(fnlambda.EnvWorkerMaxEventAge),
		"the worker function's maximum event age in seconds, 60-21600 (terraform/aws's worker_max_event_age_s); a launch may wait that long in Lambda's queue while the function is throttled, so it is added to each run's start timeout (default 21600, Lambda's; env "+fnlambda.EnvWorkerMaxEventAge+")")
	f.StringVar(&a.lambdaEndpoint, "lambda-endpoint", os.Getenv(fnlambda.EnvLambdaEndpoint),
		"Lambda endpoint URL (default: the region's; env "+fnlambda.EnvLambdaEndpoint+")")
	f.StringVar(&a.kmsKeys, "kms-keys", os.Getenv(fnlambda.EnvKMSKeys),
		"with --dynamodb-table: seal inline configuration with this KMS keyring, ID=KEY_ARN[,ID=KEY_ARN], primary first, the worker function's own (terraform/aws's kms_keys); the function's SORTIE_CONFIG_ENV is the allowlist; inline configuration is off without it (env "+fnlambda.EnvKMSKeys+")")
	f.StringVar(&a.kmsEndpoint, "kms-endpoint", os.Getenv(fnlambda.EnvKMSEndpoint),
		"KMS endpoint URL (default: the region's; env "+fnlambda.EnvKMSEndpoint+")")
}

// validateAWS checks the AWS flags together with the others.
func (g *globals) validateAWS() error {
	a := &g.aws
	if a.table == "" {
		for _, f := range []struct{ flag, env, value string }{
			{"--lambda-function", fnlambda.EnvWorkerFunction, a.function},
			{"--lambda-endpoint", fnlambda.EnvLambdaEndpoint, a.lambdaEndpoint},
			{"--lambda-max-event-age", fnlambda.EnvWorkerMaxEventAge, a.maxEventAge},
			{"--dynamodb-endpoint", fnlambda.EnvDynamoEndpoint, a.dynamoEndpoint},
			{"--kms-keys", fnlambda.EnvKMSKeys, a.kmsKeys},
			{"--kms-endpoint", fnlambda.EnvKMSEndpoint, a.kmsEndpoint},
		} {
			if f.value != "" {
				return usagef("%s (or %s) needs --dynamodb-table (or %s): the embedded host has no use for it", f.flag, f.env, fnlambda.EnvTable)
			}
		}
		return nil
	}
	if g.hostURL != "" {
		return usagef("--host and --dynamodb-table: choose one (--host talks to a sortie serve, --dynamodb-table makes this process the host)")
	}
	keys, err := fnlambda.ParseKMSKeys("--kms-keys", a.kmsKeys)
	if err != nil {
		return usagef("%v", err)
	}
	a.keys = keys
	if a.eventAge, err = fnlambda.ParseMaxEventAge("--lambda-max-event-age", a.maxEventAge); err != nil {
		return usagef("%v", err)
	}
	if a.pageKey, err = awshost.ParsePageTokenKey(awshost.EnvPageTokenKey, os.Getenv(awshost.EnvPageTokenKey)); err != nil {
		return usagef("%v", err)
	}
	if a.sealedPageKey, err = awshost.ParsePageTokenKey(awshost.EnvPageTokenKeySealed, os.Getenv(awshost.EnvPageTokenKeySealed)); err != nil {
		return usagef("%v", err)
	}
	if g.command != nil && g.command.Name() == "list" && a.pageKey == nil && a.sealedPageKey == nil {
		return usagef("list --dynamodb-table needs the deployment's page-token key (%s, or %s sealed by its KMS key, as its hosts have): each page's token must be taken by the next command",
			awshost.EnvPageTokenKey, awshost.EnvPageTokenKeySealed)
	}
	return nil
}

// config is the host/awshost configuration of the flags.
func (a *awsFlags) config() awshost.Config {
	return awshost.Config{Table: a.table, DynamoEndpoint: a.dynamoEndpoint, Function: a.function,
		LambdaEndpoint: a.lambdaEndpoint, FunctionMaxEventAge: a.eventAge, KMSEndpoint: a.kmsEndpoint, KMSKeys: a.keys,
		PageTokenKey: a.pageKey, SealedPageTokenKey: a.sealedPageKey}
}

// checkAWSCommand refuses, on the AWS host without --lambda-function, a
// command that launches attempts: only get, list, cancel and push may run.
func (g *globals) checkAWSCommand() error {
	if g.aws.table == "" || g.aws.function != "" || g.gcp.job != "" || g.gcp.service != "" || g.localWorkers || launchesNothing(g.command) {
		return nil
	}
	return usagef("%s launches attempts: --dynamodb-table %s needs --lambda-function (or %s), the worker function to run them on, --cloudrun-job or --cloudrun-service, or serve --local-workers",
		g.commandName(), g.aws.table, fnlambda.EnvWorkerFunction)
}

// launchesNothing reports the commands that only read or change stored
// runs: get, list, cancel and the push commands.
func launchesNothing(c *cobra.Command) bool {
	for ; c != nil; c = c.Parent() {
		switch c.Name() {
		case "get", "list", "cancel", "push":
			return true
		}
	}
	return false
}

// commandName is the name of the command being run, for messages.
func (g *globals) commandName() string {
	if g.command == nil {
		return "this command"
	}
	return g.command.CommandPath()
}
