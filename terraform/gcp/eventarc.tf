# Optional: an Eventarc trigger delivering CloudEvents to the service's
# /events (functions/triggers/cehttp routes them to runs on the worker Job;
# a rejected event is answered 200, so Pub/Sub does not redeliver it).
resource "google_service_account" "eventarc" {
  count        = var.eventarc == null ? 0 : 1
  project      = var.project
  account_id   = "${var.name}-eventarc"
  display_name = "Sortie ${var.name} Eventarc trigger"
  depends_on   = [google_project_service.apis]
}

resource "google_project_iam_member" "eventarc_receiver" {
  count   = var.eventarc == null ? 0 : 1
  project = var.project
  role    = "roles/eventarc.eventReceiver"
  member  = google_service_account.eventarc[0].member
}

# Cloud Storage publishes its object events to Eventarc's Pub/Sub topic as
# the project's Cloud Storage service agent, which needs
# roles/pubsub.publisher (Eventarc docs, "Route Cloud Storage events to
# Cloud Run": grant it before creating a trigger for direct Cloud Storage
# events); without it the trigger cannot be created. The same agent
# encrypts the payload bucket with the module's key (payloads.tf).
data "google_storage_project_service_account" "gcs" {
  count      = local.storage_trigger || var.payload_store ? 1 : 0
  project    = var.project
  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "storage_pubsub_publisher" {
  count   = local.storage_trigger ? 1 : 0
  project = var.project
  role    = "roles/pubsub.publisher"
  member  = "serviceAccount:${data.google_storage_project_service_account.gcs[0].email_address}"
}

resource "google_cloud_run_v2_service_iam_member" "eventarc" {
  count    = var.eventarc == null ? 0 : 1
  project  = var.project
  location = var.region
  name     = google_cloud_run_v2_service.worker[0].name
  role     = "roles/run.invoker"
  member   = google_service_account.eventarc[0].member
}

resource "google_eventarc_trigger" "events" {
  count           = var.eventarc == null ? 0 : 1
  project         = var.project
  location        = coalesce(var.eventarc.location, var.region)
  name            = "${var.name}-events"
  service_account = google_service_account.eventarc[0].email
  labels          = var.labels

  matching_criteria {
    attribute = "type"
    value     = var.eventarc.event_type
  }

  dynamic "matching_criteria" {
    for_each = var.eventarc.bucket == null ? [] : [var.eventarc.bucket]
    content {
      attribute = "bucket"
      value     = matching_criteria.value
    }
  }

  destination {
    cloud_run_service {
      service = google_cloud_run_v2_service.worker[0].name
      region  = var.region
      path    = var.eventarc.path
    }
  }

  depends_on = [google_project_service.apis, google_project_iam_member.eventarc_receiver, google_project_iam_member.storage_pubsub_publisher]
}

# The service launches triggered runs on the worker Job: its identity needs
# the launcher role there.
resource "google_cloud_run_v2_job_iam_member" "service_launcher" {
  count    = var.eventarc == null ? 0 : 1
  project  = var.project
  location = var.region
  name     = google_cloud_run_v2_job.worker.name
  role     = google_project_iam_custom_role.launcher.id
  member   = google_service_account.worker.member
}
