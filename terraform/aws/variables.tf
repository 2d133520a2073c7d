variable "name" {
  type        = string
  description = "Prefix of every resource name (table, functions, roles, key alias, queues)."
  default     = "sortie"
  validation {
    condition     = can(regex("^[a-zA-Z0-9-]{1,40}$", var.name))
    error_message = "name must be 1 to 40 letters, digits or hyphens."
  }
}

variable "lambda_zip" {
  type        = string
  description = "Path of the deployment package: a zip holding bootstrap (go build -tags lambda.norpc ./cmd/sortie-lambda for linux/arm64) and, for trigger mode, the rules file."
}

variable "architecture" {
  type        = string
  description = "Instruction set of the bootstrap binary: arm64 or x86_64."
  default     = "arm64"
  validation {
    condition     = contains(["arm64", "x86_64"], var.architecture)
    error_message = "architecture must be arm64 or x86_64."
  }
}

variable "worker_memory_mb" {
  type        = number
  description = "Memory of the worker function, in MB."
  default     = 1024
}

variable "worker_timeout_s" {
  type        = number
  description = "Timeout of the worker function, in seconds (at most 900). An attempt stops ahead of it with error type deadline."
  default     = 900
  validation {
    condition     = var.worker_timeout_s >= 10 && var.worker_timeout_s <= 900
    error_message = "worker_timeout_s must be between 10 and 900 seconds."
  }
}

variable "worker_max_event_age_s" {
  type        = number
  description = "Maximum age of an asynchronous worker invocation, in seconds (60 to 21600); an older one goes to the on-failure destination (the reconciler). It is also Sortie's queue window: while the worker is throttled Lambda keeps an accepted attempt queued (retrying with a backoff of up to 5 minutes) this long, so each run's start timeout (policy start_timeout_ms, 60 s by default) counts from the end of it and a throttled queue burns no attempt. The reconciler and trigger functions get it as SORTIE_WORKER_MAX_EVENT_AGE_S; give sortie serve hosts the same value (--lambda-max-event-age)."
  default     = 3600
  validation {
    condition     = var.worker_max_event_age_s >= 60 && var.worker_max_event_age_s <= 21600
    error_message = "worker_max_event_age_s must be between 60 and 21600 seconds."
  }
}

variable "reconciler_schedule" {
  type        = string
  description = "EventBridge schedule expression of the reconciler (expired leases, due retries). Each run loops until nothing is due or reconciler_timeout_s is nearly over, so a backlog drains in one run; a retry whose backoff ends after that waits for the next one: with rate(1 minute) (EventBridge's shortest) a backoff_ms of 1 s becomes up to a minute on AWS."
  default     = "rate(1 minute)"
}

variable "reconciler_timeout_s" {
  type        = number
  description = "Timeout of the reconciler function, in seconds: its time budget per scheduled run (less 10 s to close)."
  default     = 120
  validation {
    condition     = var.reconciler_timeout_s >= 30 && var.reconciler_timeout_s <= 900
    error_message = "reconciler_timeout_s must be between 30 and 900 seconds."
  }
}

variable "worker_reserved_concurrency" {
  type        = number
  description = "Reserved concurrency of the worker function: the most attempts running at once, so a burst of workers leaves the account's concurrency to the reconciler and trigger functions; excess attempts wait in Lambda's queue (worker_max_event_age_s). -1 leaves it unreserved. Lambda keeps at least 100 of the account's concurrency unreserved, so the three reservations need an account limit of their sum + 100 (the default limit is 1,000)."
  default     = 100
  validation {
    condition     = var.worker_reserved_concurrency == -1 || var.worker_reserved_concurrency >= 1
    error_message = "worker_reserved_concurrency must be -1 (unreserved) or at least 1."
  }
}

variable "reconciler_reserved_concurrency" {
  type        = number
  description = "Reserved concurrency of the reconciler function (scheduled runs and on-failure records), kept for it whatever the workers use. -1 leaves it unreserved."
  default     = 5
  validation {
    condition     = var.reconciler_reserved_concurrency == -1 || var.reconciler_reserved_concurrency >= 1
    error_message = "reconciler_reserved_concurrency must be -1 (unreserved) or at least 1."
  }
}

variable "trigger_reserved_concurrency" {
  type        = number
  description = "Reserved concurrency of the trigger function (events to runs), kept for it whatever the workers use. -1 leaves it unreserved."
  default     = 10
  validation {
    condition     = var.trigger_reserved_concurrency == -1 || var.trigger_reserved_concurrency >= 1
    error_message = "trigger_reserved_concurrency must be -1 (unreserved) or at least 1."
  }
}

variable "trigger_rules_file" {
  type        = string
  description = "Path of the trigger rules file inside the deployment package (SORTIE_TRIGGER_RULES), relative to /var/task."
  default     = "rules.json"
}

variable "trigger_event_pattern" {
  type        = string
  description = "EventBridge event pattern (JSON) of the events routed to the trigger function."
  default     = "{\"source\":[{\"prefix\":\"sortie.\"}]}"
}

variable "trigger_s3_notifications" {
  type = map(object({
    events        = optional(list(string), ["s3:ObjectCreated:*"])
    filter_prefix = optional(string)
    filter_suffix = optional(string)
  }))
  description = "S3 buckets, by name, whose object events invoke the trigger function directly: the S3 event types (default s3:ObjectCreated:*) and optional key prefix and suffix filters. The module then owns each bucket's whole notification configuration (aws_s3_bucket_notification replaces any other on that bucket): for a bucket that notifies others too, publish to an SNS topic and list it in trigger_sns_topics instead. Empty (the default) configures none."
  default     = {}
  validation {
    condition     = alltrue([for b in values(var.trigger_s3_notifications) : length(b.events) > 0 && alltrue([for e in b.events : startswith(e, "s3:")])])
    error_message = "trigger_s3_notifications: each bucket needs at least one event, each an S3 event type such as s3:ObjectCreated:*."
  }
}

variable "trigger_sns_topics" {
  type        = list(string)
  description = "ARNs of SNS topics the trigger function subscribes to (with the permission SNS needs to invoke it), for example a topic S3 notifications fan out through. Empty (the default) subscribes to none."
  default     = []
  validation {
    condition     = alltrue([for t in var.trigger_sns_topics : can(regex("^arn:[^:]+:sns:[^:]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$", t))])
    error_message = "trigger_sns_topics: each entry must be a standard SNS topic ARN (arn:PARTITION:sns:REGION:ACCOUNT:NAME); Lambda cannot subscribe to FIFO topics."
  }
}

variable "trigger_queue_fifo" {
  type        = bool
  description = "Make the trigger queue and its dead-letter queue FIFO queues (NAME-trigger.fifo, content-based deduplication): runs of one message group start in the order its messages were sent. False (the default) makes standard queues."
  default     = false
}

variable "trigger_queue_max_receive_count" {
  type        = number
  description = "Deliveries of one trigger queue message before it moves to the dead-letter queue."
  default     = 5
}

variable "kms_key_label" {
  type        = string
  description = "Key ID of the KMS key in the keyring (SORTIE_KMS_KEYS is LABEL=KEY_ARN); stored in every envelope, so keep it when rotating to a new key."
  default     = "k1"
}

variable "config_env" {
  type        = list(string)
  description = "Environment variable names inline configuration may set for an agent (SORTIE_CONFIG_ENV). Empty refuses every configuration."
  default     = []
}

variable "allow_destinations" {
  type        = list(string)
  description = "Hosts the worker's handlers may call (SORTIE_ALLOW_DESTINATIONS): names, *.example.com, addresses, or \"*\" for HTTPS to any public host. Empty (the default) allows no outbound call."
  default     = []
}

variable "config_refs" {
  type        = string
  description = "The allowlist of configuration references (sortie.configrefs/v1 JSON, e.g. file(\"config-refs.json\")), given to the worker and trigger functions in SORTIE_CONFIG_REFS; the worker's role may read exactly the Secrets Manager secrets it names (aws_secret, ARN or name). Empty refuses every reference. Lambda's 4 KB environment limit bounds it."
  default     = ""
  validation {
    condition     = var.config_refs == "" || can(jsondecode(var.config_refs).refs)
    error_message = "config_refs must be empty or a sortie.configrefs/v1 document with refs."
  }
}

variable "log_level" {
  type        = string
  description = "Log level of the functions: debug, info, warn or error."
  default     = "info"
  validation {
    condition     = contains(["debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level must be debug, info, warn or error."
  }
}

variable "log_retention_days" {
  type        = number
  description = "Retention of the functions' CloudWatch log groups, in days."
  default     = 30
}

variable "point_in_time_recovery" {
  type        = bool
  description = "Point-in-time recovery of the DynamoDB table."
  default     = true
}

variable "deletion_protection" {
  type        = bool
  description = "Deletion protection of the DynamoDB table."
  default     = true
}

variable "tags" {
  type        = map(string)
  description = "Tags of every resource."
  default     = {}
}

variable "host_roles" {
  type        = set(string)
  description = "Roles to create for `sortie serve` hosts off Lambda, with the host's least-privilege policy: \"ecs\" (an ECS task role, output host_role_arns.ecs) and \"ec2\" (a role with the instance profile of output host_instance_profile). Empty (the default) creates none."
  default     = []
  validation {
    condition     = alltrue([for r in var.host_roles : contains(["ecs", "ec2"], r)])
    error_message = "host_roles: each entry must be \"ecs\" or \"ec2\"."
  }
}

variable "gcp_worker_service_account_id" {
  type        = string
  description = "Unique ID (numeric, 21 digits) of the Cloud Run worker's service account (terraform/gcp's worker_service_account_unique_id): creates a role that account assumes with its Google ID tokens (workload identity federation, no stored key), output cloudrun_worker_role_arn. Null (the default) creates none."
  default     = null
  validation {
    condition     = var.gcp_worker_service_account_id == null ? true : can(regex("^[0-9]{10,30}$", var.gcp_worker_service_account_id))
    error_message = "gcp_worker_service_account_id must be the service account's numeric unique ID, not its email."
  }
}

variable "gcp_token_audience" {
  type        = string
  description = "Audience of the Google ID tokens the Cloud Run worker presents (its SORTIE_AWS_TOKEN_AUDIENCE; the trust policy's accounts.google.com:oaud)."
  default     = "sts.amazonaws.com"
}

variable "payload_store" {
  type        = bool
  description = "Create the payload store's S3 bucket (output payload_bucket_url, SORTIE_PAYLOAD_BUCKET or sortie serve --payload-bucket), which keeps variables and results over their inline limits, with object access under runs/ for the host roles, GetObject/PutObject for the reconciler and trigger functions, which sign the workers' presigned URLs, and DeleteObject for the reconciler, whose retention deletes expired runs' objects. False creates none."
  default     = true
}

variable "run_retention" {
  type        = string
  description = "How long a terminal run is kept after its last update, a Go duration such as \"720h\" (SORTIE_RETENTION of the reconciler function; give hosts the same --retention): each scheduled reconcile deletes older runs with the payload objects they name. Empty keeps runs forever. Keep payload_retention_days above it."
  default     = ""
  validation {
    condition     = var.run_retention == "" || can(regex("^([0-9]+(\\.[0-9]+)?(h|m|s))+$", var.run_retention))
    error_message = "run_retention must be empty or a Go duration such as 720h."
  }
}

variable "payload_retention_days" {
  type        = number
  description = "Days after which the payload bucket's lifecycle rule deletes objects under runs/: the backstop of the store's own deletes (a run deleted or expired by a host or the reconciler, the hosts' orphan sweep) for objects they could not delete or name. Keep it above the longest retention of a run."
  default     = 30
  validation {
    condition     = var.payload_retention_days >= 1 && floor(var.payload_retention_days) == var.payload_retention_days
    error_message = "payload_retention_days must be a whole number of days, at least 1."
  }
}
