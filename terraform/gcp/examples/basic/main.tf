# Sortie's worker on Cloud Run, reporting to the DynamoDB control plane of
# terraform/aws: see README.md in this directory.
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
  description = "table_name output of the AWS deployment."
}

variable "aws_region" {
  type        = string
  description = "AWS region of the table."
  default     = "eu-west-1"
}

provider "google" {
  project = var.project
  region  = var.region
}

module "sortie" {
  source = "../.."

  project                      = var.project
  region                       = var.region
  name                         = "sortie-example"
  image                        = var.image
  dynamodb_table               = var.dynamodb_table
  aws_region                   = var.aws_region
  aws_access_key_id_secret     = "sortie-aws-access-key-id"
  aws_secret_access_key_secret = "sortie-aws-secret-access-key"
}

output "sortie" {
  description = "Job, service URL, service accounts and key."
  value       = module.sortie
}
