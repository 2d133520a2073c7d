# Identities: the worker (the job's and the service's containers) and the
# launcher, the host's identity (sortie serve or any host running
# launchers/cloudrun: RunJob with overrides, GetExecution,
# CancelExecution, POSTs to the service, and Cloud KMS Encrypt and Decrypt
# on the key, see kms.tf). A host on a VM runs as it by attaching it to the
# instance (service_account { email = launcher_service_account, scopes =
# ["cloud-platform"] }); a host on GKE through Workload Identity
# (host_gke_service_accounts).
resource "google_service_account" "worker" {
  project      = var.project
  account_id   = "${var.name}-worker"
  display_name = "Sortie ${var.name} worker (Cloud Run job and service)"
  depends_on   = [google_project_service.apis]
}

resource "google_service_account" "launcher" {
  project      = var.project
  account_id   = "${var.name}-launcher"
  display_name = "Sortie ${var.name} launcher (hosts and reconcilers)"
  depends_on   = [google_project_service.apis]
}

# With the fallback key (aws_*_secret), the worker reads those two
# secrets, nothing else.
resource "google_secret_manager_secret_iam_member" "worker" {
  for_each  = local.aws_secrets
  project   = var.project
  secret_id = each.value
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.worker.member
  # Secret Manager must be enabled before the secrets' policies are set.
  depends_on = [google_project_service.apis]
}

# Configuration references: the worker reads exactly the Secret Manager
# secrets the allowlist (var.config_refs) names, and none when it names
# none ("projects/P/secrets/S", with or without "/versions/V").
locals {
  config_refs = try(jsondecode(var.config_refs).refs, {})
  config_ref_secrets = toset([
    for ref in values(local.config_refs) : regex("^projects/[^/]+/secrets/[^/]+", ref.gcp_secret)
    if try(ref.gcp_secret, "") != ""
  ])
}

resource "google_secret_manager_secret_iam_member" "config_refs" {
  for_each   = local.config_ref_secrets
  secret_id  = each.value
  role       = "roles/secretmanager.secretAccessor"
  member     = google_service_account.worker.member
  depends_on = [google_project_service.apis]
}

# Exactly the permissions launchers/cloudrun's JobsLauncher calls for (the
# contract test in terraform/ derives them from its RunJob, GetExecution
# and CancelExecution calls), instead of roles/run.developer.
resource "google_project_iam_custom_role" "launcher" {
  project     = var.project
  role_id     = replace("${var.name}_launcher", "-", "_")
  title       = "Sortie ${var.name} launcher"
  description = "Run the Sortie worker job with overrides, read and cancel its executions."
  permissions = ["run.executions.cancel", "run.executions.get", "run.jobs.run", "run.jobs.runWithOverrides"]
  depends_on  = [google_project_service.apis]
}

locals {
  launchers = concat([google_service_account.launcher.member], var.launcher_members)
}

resource "google_cloud_run_v2_job_iam_member" "launcher" {
  for_each = toset(local.launchers)
  project  = var.project
  location = var.region
  name     = google_cloud_run_v2_job.worker.name
  role     = google_project_iam_custom_role.launcher.id
  member   = each.value
}

resource "google_cloud_run_v2_service_iam_member" "launcher" {
  for_each = local.service_enabled ? toset(local.launchers) : toset([])
  project  = var.project
  location = var.region
  name     = google_cloud_run_v2_service.worker[0].name
  role     = "roles/run.invoker"
  member   = each.value
}

# GKE Workload Identity: pods of these Kubernetes service accounts run as
# the launcher service account.
resource "google_service_account_iam_member" "host_gke" {
  for_each           = toset(var.host_gke_service_accounts)
  service_account_id = google_service_account.launcher.name
  role               = "roles/iam.workloadIdentityUser"
  member             = "serviceAccount:${var.project}.svc.id.goog[${each.value}]"
}
