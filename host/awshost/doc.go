// Package awshost opens Sortie's AWS parts from one [Config]: the DynamoDB
// control plane (controlplane/dynamo), the KMS keyring that seals inline
// configuration (crypto/awskms, crypto/envelope) and the Lambda launcher of
// the worker function (launchers/lambda). Region and credentials are the
// SDK's usual ones (AWS_REGION, the AWS_* variables, shared files, the
// task, instance or execution role).
//
// [Open] is used by every host on AWS: package host (sortie serve and the
// CLI's --dynamodb-table commands in a container or on a laptop) and the
// Cloud Run container when its control plane is a DynamoDB table. The
// Lambda function, whose handler [Function] builds from functions/lambda's
// [Env] in worker, reconciler or trigger mode, opens with [OpenWith] and
// [LambdaConfig] instead: the runtime's environment holds its region and
// credentials, and the bootstrap links no configuration loading.
//
// Every host talks to DynamoDB through two clients with retry budgets of
// their own: one for the calls that keep attempts alive (workers' and
// callbacks' claims, heartbeats, events and finishes, marked by
// sortie.LivenessContext; 5 attempts, no client-side retry quota) and one
// for everything else (submissions, reads, the reconciler; standard mode,
// 3 attempts, backoff at most 1 s), so a burst of throttled submissions
// never starves the heartbeats of running attempts. Throttling that
// outlasts the retries is sortie.ErrThrottled (HTTP 429).
//
// The package stays lean: the Lambda bootstrap (cmd/sortie-lambda) links
// it, so it imports no SQLite, HTTP server, A2A, gRPC or CLI package.
//
// [Env]: https://pkg.go.dev/github.com/sortie-run/sortie/functions/lambda#Env
package awshost
