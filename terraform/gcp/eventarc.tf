# Optional: an Eventarc trigger delivering CloudEvents to the service's
# /events (functions/triggers/cehttp routes them to runs on the worker Job).
resource "google_service_account" "eventarc" {
  count        = var.eventarc == null ? 0 : 1
  project      = var.project
  account_id   = "${var.name}-eventarc"
  display_name = "Sortie ${var.name} Eventarc trigger"
}

resource "google_project_iam_member" "eventarc_receiver" {
  count   = var.eventarc == null ? 0 : 1
  project = var.project
  role    = "roles/eventarc.eventReceiver"
  member  = google_service_account.eventarc[0].member
}

resource "google_cloud_run_v2_service_iam_member" "eventarc" {
  count    = var.eventarc == null ? 0 : 1
  project  = var.project
  location = var.region
  name     = google_cloud_run_v2_service.worker.name
  role     = "roles/run.invoker"
  member   = google_service_account.eventarc[0].member
}

resource "google_eventarc_trigger" "events" {
  count           = var.eventarc == null ? 0 : 1
  project         = var.project
  location        = var.region
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
      service = google_cloud_run_v2_service.worker.name
      region  = var.region
      path    = var.eventarc.path
    }
  }

  depends_on = [google_project_iam_member.eventarc_receiver]
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
