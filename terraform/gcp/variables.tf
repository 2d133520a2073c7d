variable "project" {
  type        = string
  description = "Google Cloud project ID."
}

variable "region" {
  type        = string
  description = "Region of the Cloud Run job and service, the key ring and the Eventarc trigger."
}

variable "name" {
  type        = string
  description = "Prefix of every resource name (job, service, service accounts, key ring)."
  default     = "sortie"
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,20}$", var.name))
    error_message = "name must start with a lowercase letter and have at most 21 lowercase letters, digits or hyphens."
  }
}

variable "image" {
  type        = string
  description = "Container image of cmd/sortie-cloudrun (for example REGION-docker.pkg.dev/PROJECT/REPO/sortie-cloudrun:TAG)."
}

variable "dynamodb_table" {
  type        = string
  description = "The DynamoDB control plane table (output table_name of terraform/aws): SORTIE_DYNAMODB_TABLE, reached with aws_role_arn (or, as a fallback, the key of the two aws_*_secret variables). Null (the default): the containers have no control plane and no AWS access; attempts report over the launching host's signed callbacks (sortie serve --worker-callbacks)."
  default     = null
}

variable "aws_region" {
  type        = string
  description = "AWS region of the DynamoDB table (AWS_REGION). Required with dynamodb_table."
  default     = null
}

variable "aws_role_arn" {
  type        = string
  description = "IAM role the containers reach the table as, assumed with their service account's Google ID token (terraform/aws's cloudrun_worker_role_arn; SORTIE_AWS_ROLE_ARN): workload identity federation, no stored key. Null (the default): none."
  default     = null
}

variable "aws_token_audience" {
  type        = string
  description = "Audience of the ID tokens exchanged for AWS credentials (SORTIE_AWS_TOKEN_AUDIENCE); terraform/aws's gcp_token_audience."
  default     = "sts.amazonaws.com"
}

variable "aws_access_key_id_secret" {
  type        = string
  description = "Fallback to aws_role_arn, off by default: a Secret Manager secret ID holding the access key ID of an IAM user limited to the table's items (see README: credentials). Set with aws_secret_access_key_secret."
  default     = null
}

variable "aws_secret_access_key_secret" {
  type        = string
  description = "Fallback to aws_role_arn: the Secret Manager secret ID holding that IAM user's secret access key."
  default     = null
}

variable "kms_key_label" {
  type        = string
  description = "Key ID of the Cloud KMS key in the keyring (SORTIE_KMS_KEYS is LABEL=KEY_NAME); stored in every envelope, so keep it when rotating to a new key."
  default     = "gcp-1"
}

variable "config_refs" {
  type        = string
  description = "The allowlist of configuration references (sortie.configrefs/v1 JSON, e.g. file(\"config-refs.json\")), given to the workers in SORTIE_CONFIG_REFS (32 KiB at most); the worker's service account may read exactly the Secret Manager secrets it names (gcp_secret). Empty refuses every reference."
  default     = ""
  validation {
    condition     = var.config_refs == "" || can(jsondecode(var.config_refs).refs)
    error_message = "config_refs must be empty or a sortie.configrefs/v1 document with refs."
  }
}

variable "config_env" {
  type        = list(string)
  description = "Environment variable names inline configuration may set for an agent (SORTIE_CONFIG_ENV). Empty refuses every configuration."
  default     = []
}

variable "host_gke_service_accounts" {
  type        = list(string)
  description = "Kubernetes service accounts, as NAMESPACE/NAME, whose pods run `sortie serve` as the launcher service account (GKE Workload Identity: roles/iam.workloadIdentityUser on it). Empty (the default) binds none."
  default     = []
  validation {
    condition     = alltrue([for a in var.host_gke_service_accounts : can(regex("^[a-z0-9-]+/[a-z0-9-]+$", a))])
    error_message = "host_gke_service_accounts: each entry must be NAMESPACE/NAME."
  }
}

variable "job_timeout_s" {
  type        = number
  description = "Default task timeout of the job, in seconds; the launcher overrides it per attempt with the attempt's deadline."
  default     = 3600
}

variable "service_timeout_s" {
  type        = number
  description = "Request timeout of the service, in seconds."
  default     = 300
}

variable "service" {
  type        = bool
  description = "Also deploy the worker as a service (launchers/cloudrun ServiceLauncher, sortie serve --cloudrun-service). False (the default): attempts run on the Job, one execution each, which Sortie can cancel and describe; a service runs each attempt after answering 202, where Cloud Run's autoscaler does not see it and scale-in or a new revision stops it (SIGTERM, then SIGKILL 10 s later), so attempts on a service are lost more often and recovered only by their lease. An Eventarc trigger deploys the service for its events either way."
  default     = false
}

variable "service_min_instances" {
  type        = number
  description = "Minimum instances of the service when it runs attempts (var.service): at least 1, so the instances running background attempts are not all scaled in."
  default     = 1
  validation {
    condition     = var.service_min_instances >= 1
    error_message = "service_min_instances must be at least 1."
  }
}

variable "service_max_instances" {
  type        = number
  description = "Maximum instances of the service."
  default     = 10
}

variable "memory" {
  type        = string
  description = "Memory of one container (Cloud Run notation, for example 1Gi)."
  default     = "1Gi"
}

variable "cpu" {
  type        = string
  description = "CPUs of one container (Cloud Run notation, for example 1)."
  default     = "1"
}

variable "log_level" {
  type        = string
  description = "Log level: debug, info, warn or error."
  default     = "info"
  validation {
    condition     = contains(["debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level must be debug, info, warn or error."
  }
}

variable "key_rotation_period" {
  type        = string
  description = "Rotation period of the KMS key, in seconds with an s suffix (default 90 days)."
  default     = "7776000s"
}

variable "launcher_members" {
  type        = list(string)
  description = "Extra IAM members (user:…, serviceAccount:…) that may launch attempts, next to the launcher service account this module creates."
  default     = []
}

variable "eventarc" {
  type = object({
    event_type = string
    bucket     = optional(string)
    location   = optional(string)
    path       = optional(string, "/events")
    rules_path = string
  })
  description = "Eventarc trigger to the service: the CloudEvent type (for example google.cloud.storage.object.v1.finalized or google.cloud.pubsub.topic.v1.messagePublished), the bucket for Cloud Storage events, the trigger's location (defaults to region; for Cloud Storage events it must be the bucket's location, for example us for a US multi-region bucket), the receiver's HTTP path (/events, where cmd/sortie-cloudrun serves CloudEvents) and the path of the trigger rules file inside the image (SORTIE_TRIGGER_RULES). For a Cloud Storage event type the module also grants the project's Cloud Storage service agent roles/pubsub.publisher and enables the Cloud Storage API. Null (the default) creates none."
  default     = null
  validation {
    condition     = var.eventarc == null ? true : (!startswith(var.eventarc.event_type, "google.cloud.storage.") || var.eventarc.bucket != null)
    error_message = "eventarc: a Cloud Storage event type needs the bucket."
  }
}

variable "allow_destinations" {
  type        = list(string)
  description = "Hosts the workers' handlers may call (SORTIE_ALLOW_DESTINATIONS): names, *.example.com, addresses, or \"*\" for HTTPS to any public host. Empty (the default) allows no outbound call."
  default     = []
}

variable "labels" {
  type        = map(string)
  description = "Labels of every resource that takes them."
  default     = {}
}

variable "payload_store" {
  type        = bool
  description = "Create the payload store's Cloud Storage bucket (output payload_bucket_url, SORTIE_PAYLOAD_BUCKET or sortie serve --payload-bucket), which keeps variables and results over their inline limits, with object access under runs/ for the launcher and the worker service accounts. False creates none."
  default     = true
}

variable "payload_retention_days" {
  type        = number
  description = "Days after which the payload bucket's lifecycle rule deletes objects under runs/: the backstop of the store's own deletes (a run deleted or expired, the orphan sweep). Keep it above the longest retention of a run."
  default     = 30
  validation {
    condition     = var.payload_retention_days >= 1 && floor(var.payload_retention_days) == var.payload_retention_days
    error_message = "payload_retention_days must be a whole number of days, at least 1."
  }
}
