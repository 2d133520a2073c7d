# The APIs this module's resources call, enabled on the project so a fresh
# project applies in one go; kept enabled on destroy (other workloads may
# use them). Secret Manager only for the fallback AWS key. Eventarc needs Pub/Sub (its transport) and, for Cloud Storage
# triggers, the Cloud Storage API, which the payload store's bucket needs too. The IAM Service Account Credentials API
# is what a host calls to sign payload URLs (signBlob) and GKE Workload Identity to act as the launcher. The contract test in terraform/ derives
# the list from the resource types used here.
locals {
  storage_trigger = var.eventarc == null ? false : startswith(var.eventarc.event_type, "google.cloud.storage.")
  apis = toset(concat(
    ["cloudkms.googleapis.com", "cloudresourcemanager.googleapis.com", "iam.googleapis.com", "run.googleapis.com"],
    var.aws_access_key_id_secret == null ? [] : ["secretmanager.googleapis.com"],
    var.eventarc == null ? [] : ["eventarc.googleapis.com", "pubsub.googleapis.com"],
    local.storage_trigger || var.payload_store ? ["storage.googleapis.com"] : [],
    var.payload_store || length(var.host_gke_service_accounts) > 0 ? ["iamcredentials.googleapis.com"] : [],
  ))
}

resource "google_project_service" "apis" {
  for_each           = local.apis
  project            = var.project
  service            = each.value
  disable_on_destroy = false
}
