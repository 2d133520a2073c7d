# The key of inline configuration (crypto/envelope over crypto/awskms).
# Envelopes carry the encryption context purpose and agent (and run_id,
# attempt); the IAM policies grant kms:Decrypt per purpose.
resource "aws_kms_key" "config" {
  description             = "Sortie ${var.name}: inline configuration of runs (envelope encryption)"
  enable_key_rotation     = true
  rotation_period_in_days = 365
  deletion_window_in_days = 30
  tags                    = var.tags
}

resource "aws_kms_alias" "config" {
  name          = "alias/${var.name}-config"
  target_key_id = aws_kms_key.config.key_id
}
