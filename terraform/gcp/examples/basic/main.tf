# Sortie's worker on Cloud Run. By default the containers have no control
# plane and no AWS access: a `sortie serve` host launches attempts on the
# job and the workers report over its signed callbacks. With
# dynamodb_table and aws_role_arn they report to the DynamoDB control
# plane of terraform/aws instead, with no stored key. See README.md in this
# directory.
terraform {
  required_version = ">= 1.6.0"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0.0, < 7.0.0"
    }
  }
}

variable "project" {
  type        = string
  description = "Google Cloud project ID."
}

variable "region" {
  type        = string
  description = "Google Cloud region."
  default     = "europe-west1"
}

variable "image" {
  type        = string
  description = "The pushed cmd/sortie-cloudrun image."
}

variable "dynamodb_table" {
  type        = string
  description = "table_name output of the AWS deployment, for workers that report to DynamoDB; null (the default) for callbacks only."
  default     = null
}

variable "aws_role_arn" {
  type        = string
  description = "cloudrun_worker_role_arn output of the AWS deployment (with dynamodb_table)."
  default     = null
}

variable "aws_region" {
  type        = string
  description = "AWS region of the table (with dynamodb_table)."
  default     = null
}

variable "host_gke_service_accounts" {
  type        = list(string)
  description = "NAMESPACE/NAME of the Kubernetes service account a GKE host runs as; empty for a host on a VM."
  default     = []
}

provider "google" {
  project = var.project
  region  = var.region
}

module "sortie" {
  source = "../.."

  project                   = var.project
  region                    = var.region
  name                      = "sortie-example"
  image                     = var.image
  config_env                = ["API_TOKEN"]
  dynamodb_table            = var.dynamodb_table
  aws_role_arn              = var.aws_role_arn
  aws_region                = var.aws_region
  host_gke_service_accounts = var.host_gke_service_accounts
}

output "sortie" {
  description = "Job, service URL, service accounts, key and keyring value."
  value       = module.sortie
}
