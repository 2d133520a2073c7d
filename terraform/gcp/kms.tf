# A key for hosts that seal inline configuration with crypto/gcpkms
# (Cloud KMS rotates it every key_rotation_period). The Cloud Run worker
# reads no keyring yet (functions/cloudrun has no KMS variable), so inline
# configuration stays off on Cloud Run and no role on the key is granted to
# the worker; the launcher may encrypt and decrypt.
resource "google_kms_key_ring" "sortie" {
  project    = var.project
  location   = var.region
  name       = "${var.name}-keyring"
  depends_on = [google_project_service.apis]
}

resource "google_kms_crypto_key" "config" {
  name            = "${var.name}-config"
  key_ring        = google_kms_key_ring.sortie.id
  purpose         = "ENCRYPT_DECRYPT"
  rotation_period = var.key_rotation_period
  labels          = var.labels

  lifecycle {
    prevent_destroy = true
  }
}

resource "google_kms_crypto_key_iam_member" "launcher" {
  crypto_key_id = google_kms_crypto_key.config.id
  role          = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
  member        = google_service_account.launcher.member
}
