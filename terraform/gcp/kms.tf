# The key of inline configuration (crypto/envelope over crypto/gcpkms;
# Cloud KMS rotates its version every key_rotation_period, and older
# versions still decrypt). The launcher (the host) seals with it: Encrypt
# for the copy at rest and each attempt's copy, Decrypt to re-seal the copy
# at rest per attempt. The worker opens each attempt's copy and the run's
# variables kept by reference (Decrypt), and seals a result it keeps by
# reference (Encrypt).
#
# What Cloud KMS cannot split by purpose: its IAM has no condition on a
# request's additional authenticated data, the way AWS KMS policies
# condition kms:Decrypt on kms:EncryptionContext:purpose. The envelope's
# purpose is bound as AAD, so an envelope opens only as what it was
# sealed for, but the worker's Decrypt permission on this key would open a
# run's copy at rest too if the worker could read it. It cannot when it
# reports over callbacks (dynamodb_table null: no control plane access);
# with dynamodb_table it can read the run items of the table, which hold
# the copies at rest. A deployment that must keep workers from them uses
# callbacks, or a second key for workers only (not implemented: one
# keyring seals both copies).
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

resource "google_kms_crypto_key_iam_member" "worker" {
  crypto_key_id = google_kms_crypto_key.config.id
  role          = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
  member        = google_service_account.worker.member
}
