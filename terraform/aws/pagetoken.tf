# The deployment's page-token key: every host signs List page tokens with
# it, so a token one replica, restart or CLI invocation made is taken by
# the others (controlplane.PageTokens). It is 32 random bytes, sealed by
# the deployment's KMS key with the encryption context purpose =
# page-token-key, which only the host roles may decrypt; hosts read the
# ciphertext (output page_token_key_sealed) from SORTIE_PAGE_TOKEN_KEY_SEALED
# and decrypt it once at start. The plaintext is in the terraform state,
# like every generated secret: keep the state encrypted.
resource "random_bytes" "page_token_key" {
  length = 32
}

resource "aws_kms_ciphertext" "page_token_key" {
  key_id    = aws_kms_key.config.key_id
  plaintext = random_bytes.page_token_key.base64
  context   = { purpose = "page-token-key" }
}
