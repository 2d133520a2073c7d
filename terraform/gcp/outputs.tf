output "job" {
  description = "Full name of the worker job (launchers/cloudrun JobsOptions.Job)."
  value       = google_cloud_run_v2_job.worker.id
}

output "service_url" {
  description = "URL of the worker service (launchers/cloudrun ServiceLauncher URL), the audience it checks (SORTIE_SERVICE_AUDIENCE)."
  value       = local.service_url
}

output "worker_service_account" {
  description = "Email of the worker's service account."
  value       = google_service_account.worker.email
}

output "launcher_service_account" {
  description = "Email of the launcher's service account (run hosts and reconcilers as it)."
  value       = google_service_account.launcher.email
}

output "kms_key" {
  description = "Resource name of the inline configuration key (crypto/gcpkms)."
  value       = google_kms_crypto_key.config.id
}

output "eventarc_trigger" {
  description = "Name of the Eventarc trigger, or null when none is configured."
  value       = var.eventarc == null ? null : google_eventarc_trigger.events[0].name
}
