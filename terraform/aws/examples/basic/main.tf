# A complete deployment of Sortie on AWS: see README.md in this directory.
terraform {
  required_version = ">= 1.6.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.60.0, < 7.0.0"
    }
  }
}

variable "region" {
  type        = string
  description = "AWS region to deploy to."
  default     = "eu-west-1"
}

variable "gcp_worker_service_account_id" {
  type        = string
  description = "Unique ID of the Cloud Run worker's service account (terraform/gcp/examples/basic's worker_service_account_unique_id), for workers on Cloud Run that report to this table; null for none."
  default     = null
}

variable "host_roles" {
  type        = set(string)
  description = "Roles for sortie serve hosts off Lambda: \"ecs\", \"ec2\"."
  default     = []
}

provider "aws" {
  region = var.region
}

module "sortie" {
  source = "../.."

  name                  = "sortie-example"
  lambda_zip            = "${path.module}/sortie-lambda.zip"
  trigger_rules_file    = "rules.json"
  trigger_event_pattern = jsonencode({ source = ["sortie.example"] })
  deletion_protection   = false
  log_retention_days    = 14
  tags                  = { project = "sortie-example" }

  gcp_worker_service_account_id = var.gcp_worker_service_account_id
  host_roles                    = var.host_roles
}

output "sortie" {
  description = "Everything a client needs (table, functions, key, queues)."
  value       = module.sortie
}
