// Package terraform holds only the contract tests of the OpenTofu/Terraform
// modules in this directory (aws/, gcp/): they parse the modules with
// github.com/hashicorp/hcl/v2 and compare them to the code — the DynamoDB
// table to [github.com/sortie-run/sortie/controlplane/dynamo.TableDefinition],
// the IAM policies to the AWS API interfaces the code calls through, and the
// environment the modules set to the Env* constants the binaries read.
package terraform
