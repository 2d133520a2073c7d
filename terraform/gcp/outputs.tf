output "job" {
  description = "Full name of the worker job (launchers/cloudrun JobsOptions.Job)."
  value       = google_cloud_run_v2_job.worker.id
}

output "service_url" {
  description = "URL of the worker service (launchers/cloudrun ServiceLauncher URL), the audience it checks (SORTIE_SERVICE_AUDIENCE); null without the service (var.service, or an Eventarc trigger)."
  value       = local.service_enabled ? local.service_url : null
}

output "worker_service_account" {
  description = "Email of the worker's service account."
  value       = google_service_account.worker.email
}

output "worker_service_account_unique_id" {
  description = "Unique ID of the worker's service account: terraform/aws's gcp_worker_service_account_id (the federated role trusts it)."
  value       = google_service_account.worker.unique_id
}

output "launcher_service_account" {
  description = "Email of the launcher's service account: the host's identity (sortie serve on a VM or GKE, reconcilers)."
  value       = google_service_account.launcher.email
}

output "kms_key" {
  description = "Resource name of the inline configuration key (crypto/gcpkms)."
  value       = google_kms_crypto_key.config.id
}

output "kms_keys" {
  description = "Keyring value of hosts that seal inline configuration for these workers (sortie serve --gcp-kms-keys; the workers' SORTIE_KMS_KEYS: LABEL=KEY_NAME)."
  value       = local.kms_keys
}

output "eventarc_trigger" {
  description = "Name of the Eventarc trigger, or null when none is configured."
  value       = var.eventarc == null ? null : google_eventarc_trigger.events[0].name
}

output "payload_bucket_url" {
  description = "URL of the payload store's bucket for hosts (SORTIE_PAYLOAD_BUCKET; sortie serve --payload-bucket: gs://BUCKET), or null without payload_store."
  value       = var.payload_store ? "gs://${google_storage_bucket.payloads[0].name}" : null
}
