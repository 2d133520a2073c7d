# cmd/sortie-cloudrun as a Cloud Run job (one execution per attempt, the
# invocation in SORTIE_INVOCATION through RunJob overrides) and as a
# service (POST /invocations with a Google ID token). Both report to the
# DynamoDB control plane with AWS credentials from Secret Manager.
data "google_project" "this" {
  project_id = var.project
}

locals {
  # Cloud Run's deterministic service URL, the audience callers' ID tokens
  # carry (SORTIE_SERVICE_AUDIENCE); known before the service exists.
  service_name = "${var.name}-worker"
  service_url  = "https://${local.service_name}-${data.google_project.this.number}.${var.region}.run.app"

  control_plane_env = {
    SORTIE_DYNAMODB_TABLE = var.dynamodb_table
    AWS_REGION            = var.aws_region
    SORTIE_LOG_LEVEL      = var.log_level
  }
  # With an Eventarc trigger the service routes CloudEvents on /events by
  # the rules file in the image and launches runs on the worker Job; an
  # empty SORTIE_TRIGGER_RULES leaves that off.
  trigger_env = {
    SORTIE_TRIGGER_RULES = var.eventarc == null ? "" : var.eventarc.rules_path
    SORTIE_CLOUDRUN_JOB  = google_cloud_run_v2_job.worker.id
  }
  aws_secrets = {
    AWS_ACCESS_KEY_ID     = var.aws_access_key_id_secret
    AWS_SECRET_ACCESS_KEY = var.aws_secret_access_key_secret
  }
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
          for_each = local.control_plane_env
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

  depends_on = [google_project_service.apis, google_secret_manager_secret_iam_member.worker]
}

resource "google_cloud_run_v2_service" "worker" {
  project             = var.project
  location            = var.region
  name                = local.service_name
  labels              = var.labels
  ingress             = "INGRESS_TRAFFIC_ALL"
  deletion_protection = false

  template {
    service_account = google_service_account.worker.email
    timeout         = "${var.service_timeout_s}s"
    scaling {
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
      dynamic "env" {
        for_each = local.trigger_env
        content {
          name  = env.key
          value = env.value
        }
      }
      dynamic "env" {
        for_each = local.control_plane_env
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

  depends_on = [google_project_service.apis, google_secret_manager_secret_iam_member.worker]
}
