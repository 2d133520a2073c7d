# The payload store (package payload): variables and results over their
# inline limits, kept as objects runs/RUN_ID/NAME, each sealed with the
# run's envelope before it is written. The bucket has uniform
# bucket-level access (no object ACLs), public access prevention
# enforced, the deployment's Cloud KMS key as its default key (CMEK), and
# deletes runs/ objects after payload_retention_days: the backstop of the
# store's own deletes (a run deleted or expired) and its orphan sweep.
# The launcher (hosts: sortie serve --payload-bucket, output
# payload_bucket_url) gets object access under runs/ only; the worker
# none: it reads variables and writes results through the signed URLs
# its host grants per attempt, which act with the launcher's access.
locals {
  payload_prefix = "runs/"
  payload_bucket = "${var.project}-${var.name}-payloads"
}

# Cloud Storage encrypts with the key as its own service agent
# (data.google_storage_project_service_account.gcs, eventarc.tf).
resource "google_kms_crypto_key_iam_member" "payloads" {
  count         = var.payload_store ? 1 : 0
  crypto_key_id = google_kms_crypto_key.config.id
  role          = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
  member        = "serviceAccount:${data.google_storage_project_service_account.gcs[0].email_address}"
}

resource "google_storage_bucket" "payloads" {
  count                       = var.payload_store ? 1 : 0
  project                     = var.project
  name                        = local.payload_bucket
  location                    = var.region
  labels                      = var.labels
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false

  encryption {
    default_kms_key_name = google_kms_crypto_key.config.id
  }

  lifecycle_rule {
    condition {
      age            = var.payload_retention_days
      matches_prefix = [local.payload_prefix]
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [google_project_service.apis, google_kms_crypto_key_iam_member.payloads]
}

# What gocloud.dev/blob's gcsblob calls for the store: objects.get (reads
# and attributes), objects.create and objects.delete (writes; replacing
# an object needs both), objects.list (DeleteRun and the sweep).
resource "google_project_iam_custom_role" "payloads" {
  count       = var.payload_store ? 1 : 0
  project     = var.project
  role_id     = replace("${var.name}_payloads", "-", "_")
  title       = "Sortie ${var.name} payloads"
  description = "Read, write, delete and list the objects of Sortie's payload store."
  permissions = ["storage.objects.create", "storage.objects.delete", "storage.objects.get", "storage.objects.list"]
  depends_on  = [google_project_service.apis]
}

# Objects under runs/ only; a list is checked on the bucket itself.
resource "google_storage_bucket_iam_member" "payloads" {
  # Keys known at plan time; the members are not until the accounts exist.
  for_each = var.payload_store ? { launcher = google_service_account.launcher.member } : {}
  bucket   = google_storage_bucket.payloads[0].name
  role     = google_project_iam_custom_role.payloads[0].id
  member   = each.value
  condition {
    title       = "sortie-payload-runs"
    description = "The payload store's runs/ objects, and listing the bucket."
    expression  = "resource.type == \"storage.googleapis.com/Bucket\" || resource.name.startsWith(\"projects/_/buckets/${local.payload_bucket}/objects/${local.payload_prefix}\")"
  }
}

# A host signs each attempt's URLs as the launcher service account. With
# no key file (on GCE, GKE or Cloud Run), gcsblob signs through the IAM
# Service Account Credentials API's signBlob, as the account itself: the
# launcher may sign as itself, and do nothing else as any account.
resource "google_project_iam_custom_role" "payload_signer" {
  count       = var.payload_store ? 1 : 0
  project     = var.project
  role_id     = replace("${var.name}_payload_signer", "-", "_")
  title       = "Sortie ${var.name} payload URL signer"
  description = "Sign the payload store's URLs (signBlob) as the launcher service account."
  permissions = ["iam.serviceAccounts.signBlob"]
  depends_on  = [google_project_service.apis]
}

resource "google_service_account_iam_member" "payload_signer" {
  count              = var.payload_store ? 1 : 0
  service_account_id = google_service_account.launcher.name
  role               = google_project_iam_custom_role.payload_signer[0].id
  member             = google_service_account.launcher.member
}
