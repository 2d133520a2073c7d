# cmd/sortie-cloudrun as a Cloud Run job (one execution per attempt, the
# invocation in SORTIE_INVOCATION through RunJob overrides) and as a
# service (POST /invocations with a Google ID token). Both open inline
# configuration with the Cloud KMS key (SORTIE_KMS_KEYS) and report where
# each invocation says: over the launching host's signed callbacks (no
# control plane here, no AWS access), or to the DynamoDB control plane
# with dynamodb_table, as the role of aws_role_arn (workload identity
# federation) or, as a fallback, with a key from Secret Manager.
data "google_project" "this" {
  project_id = var.project
}

locals {
  # Cloud Run's deterministic service URL, the audience callers' ID tokens
  # carry (SORTIE_SERVICE_AUDIENCE); known before the service exists. The
  # container also accepts the service's other run.app URL, the one a
  # request arrives on (its hash is not known before the service exists).
  service_name = "${var.name}-worker"
  service_url  = "https://${local.service_name}-${data.google_project.this.number}.${var.region}.run.app"
  # The service exists to run attempts (var.service) or to take Eventarc's
  # events; attempts run on the Job by default (see var.service).
  service_enabled = var.service || var.eventarc != null
  # Whose ID tokens the service accepts (SORTIE_SERVICE_CALLERS): the
  # launchers' accounts and Eventarc's; a group cannot be listed (its
  # members' tokens do not name it).
  service_callers = concat(
    [for m in local.launchers : split(":", m)[1] if startswith(m, "serviceAccount:") || startswith(m, "user:")],
    var.eventarc == null ? [] : [google_service_account.eventarc[0].email],
  )

  kms_keys = "${var.kms_key_label}=${google_kms_crypto_key.config.id}"
  worker_env = merge(
    {
      SORTIE_LOG_LEVEL  = var.log_level
      SORTIE_KMS_KEYS   = local.kms_keys
      SORTIE_CONFIG_ENV = join(",", var.config_env)
      # The workers' destination policy; empty allows no outbound call.
      SORTIE_ALLOW_DESTINATIONS = join(",", var.allow_destinations)
      # The allowlist of configuration references; see iam.tf.
      SORTIE_CONFIG_REFS = var.config_refs
      # The container's size, recorded on each attempt's usage for its cost.
      SORTIE_CLOUDRUN_MEMORY = var.memory
      SORTIE_CLOUDRUN_CPU    = var.cpu
    },
    { for k, v in {
      SORTIE_DYNAMODB_TABLE = var.dynamodb_table
      AWS_REGION            = var.aws_region
    } : k => v if var.dynamodb_table != null },
    { for k, v in {
      SORTIE_AWS_ROLE_ARN       = var.aws_role_arn
      SORTIE_AWS_TOKEN_AUDIENCE = var.aws_token_audience
    } : k => v if var.aws_role_arn != null },
  )
  # With an Eventarc trigger the service routes CloudEvents on /events by
  # the rules file in the image and launches runs on the worker Job; an
  # empty SORTIE_TRIGGER_RULES leaves that off.
  trigger_env = {
    SORTIE_TRIGGER_RULES = var.eventarc == null ? "" : var.eventarc.rules_path
    SORTIE_CLOUDRUN_JOB  = google_cloud_run_v2_job.worker.id
  }
  # The fallback: a static key of an IAM user, read from Secret Manager.
  aws_secrets = { for k, v in {
    AWS_ACCESS_KEY_ID     = var.aws_access_key_id_secret
    AWS_SECRET_ACCESS_KEY = var.aws_secret_access_key_secret
  } : k => v if var.aws_access_key_id_secret != null }
}

resource "google_cloud_run_v2_job" "worker" {
  project             = var.project
  location            = var.region
  name                = "${var.name}-worker"
  labels              = var.labels
  deletion_protection = false

  template {
    task_count = 1
    template {
      service_account = google_service_account.worker.email
      # Sortie owns retries: a provider retry is only a duplicate delivery.
      max_retries = 0
      timeout     = "${var.job_timeout_s}s"

      containers {
        image = var.image
        resources {
          limits = {
            cpu    = var.cpu
            memory = var.memory
          }
        }
        env {
          name  = "SORTIE_CLOUDRUN_MODE"
          value = "job"
        }
        dynamic "env" {
          for_each = local.worker_env
          content {
            name  = env.key
            value = env.value
          }
        }
        dynamic "env" {
          for_each = local.aws_secrets
          content {
            name = env.key
            value_source {
              secret_key_ref {
                secret  = env.value
                version = "latest"
              }
            }
          }
        }
      }
    }
  }

  lifecycle {
    precondition {
      condition     = (var.aws_access_key_id_secret == null) == (var.aws_secret_access_key_secret == null)
      error_message = "aws_access_key_id_secret and aws_secret_access_key_secret go together."
    }
    precondition {
      condition     = var.dynamodb_table == null ? (var.aws_role_arn == null && var.aws_access_key_id_secret == null) : (var.aws_region != null && ((var.aws_role_arn == null) != (var.aws_access_key_id_secret == null)))
      error_message = "With dynamodb_table, set aws_region and exactly one of aws_role_arn (workload identity federation) and the aws_*_secret pair (a stored key); without it, none of them (attempts report over the host's callbacks)."
    }
  }

  depends_on = [google_project_service.apis, google_secret_manager_secret_iam_member.worker, google_secret_manager_secret_iam_member.config_refs, google_kms_crypto_key_iam_member.worker]
}

resource "google_cloud_run_v2_service" "worker" {
  count               = local.service_enabled ? 1 : 0
  project             = var.project
  location            = var.region
  name                = local.service_name
  labels              = var.labels
  ingress             = "INGRESS_TRAFFIC_ALL"
  deletion_protection = false

  template {
    service_account = google_service_account.worker.email
    timeout         = "${var.service_timeout_s}s"
    # Attempts run after the 202 answer, where the autoscaler does not see
    # them and scale-in can stop them (SIGTERM, SIGKILL 10 s later):
    # service_min_instances keeps instances up, the lease and the
    # reconciler recover an attempt an instance lost.
    scaling {
      min_instance_count = var.service ? var.service_min_instances : 0
      max_instance_count = var.service_max_instances
    }

    containers {
      image = var.image
      resources {
        # Instance-based billing (CPU always allocated): the attempt runs
        # after the 202 answer.
        cpu_idle = false
        limits = {
          cpu    = var.cpu
          memory = var.memory
        }
      }
      env {
        name  = "SORTIE_CLOUDRUN_MODE"
        value = "service"
      }
      env {
        name  = "SORTIE_SERVICE_AUDIENCE"
        value = local.service_url
      }
      env {
        name  = "SORTIE_SERVICE_CALLERS"
        value = join(",", local.service_callers)
      }
      dynamic "env" {
        for_each = local.trigger_env
        content {
          name  = env.key
          value = env.value
        }
      }
      dynamic "env" {
        for_each = local.worker_env
        content {
          name  = env.key
          value = env.value
        }
      }
      dynamic "env" {
        for_each = local.aws_secrets
        content {
          name = env.key
          value_source {
            secret_key_ref {
              secret  = env.value
              version = "latest"
            }
          }
        }
      }
    }
  }

  depends_on = [google_project_service.apis, google_secret_manager_secret_iam_member.worker, google_secret_manager_secret_iam_member.config_refs, google_kms_crypto_key_iam_member.worker]
}
