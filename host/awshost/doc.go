// Package awshost opens Sortie's AWS parts from one [Config]: the DynamoDB
// control plane (controlplane/dynamo), the KMS keyring that seals inline
// configuration (crypto/awskms, crypto/envelope) and the Lambda launcher of
// the worker function (launchers/lambda). Region and credentials are the
// SDK's usual ones (AWS_REGION, the AWS_* variables, shared files, the
// task, instance or execution role).
//
// [Open] is used by every host on AWS: package host (sortie serve and the
// CLI's --dynamodb-table commands in a container or on a laptop), the Cloud
// Run container when its control plane is a DynamoDB table, and the Lambda
// function, whose handler [Function] builds from functions/lambda's [Env]
// in worker, reconciler or trigger mode.
//
// The package stays lean: the Lambda bootstrap (cmd/sortie-lambda) links
// it, so it imports no SQLite, HTTP server, A2A, gRPC or CLI package.
//
// [Env]: https://pkg.go.dev/github.com/sortie-run/sortie/functions/lambda#Env
package awshost
