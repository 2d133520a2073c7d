# The payload store (package payload): variables and results over their
# inline limits, kept as objects runs/RUN_ID/NAME, each sealed with the
# run's envelope before it is written. The bucket adds SSE-KMS with the
# deployment's key, blocks public access, takes no ACLs, refuses plain
# HTTP, and expires runs/ objects after payload_retention_days: the
# backstop of the store's own deletes (a run deleted or expired) and its
# orphan sweep. Hosts (sortie serve --payload-bucket, output
# payload_bucket_url) get object access under runs/ only. The worker
# function gets none: it reads variables and writes results through the
# presigned URLs its host signs per attempt (payload/sealed's Granter),
# sealed into the invocation, which act with the signer's grants. The
# reconciler and trigger functions sign them too, for the attempts they
# launch (SORTIE_PAYLOAD_BUCKET; package payload/s3presign): they get
# GetObject and PutObject under runs/ and the bucket key
# (payload_objects); the reconciler also DeleteObject under runs/
# (payload_deletes), for the objects of the runs its retention expires,
# which it deletes through DELETE URLs it signs. Nothing else.
locals {
  payload_prefix = "runs/"
  # The store's URL, as hosts and the reconciler and trigger functions
  # take it.
  payload_bucket_url = var.payload_store ? "s3://${aws_s3_bucket.payloads[0].bucket}?region=${data.aws_region.current.name}" : null
  # The environment of the functions that launch attempts: the bucket's
  # URL, or nothing without the store.
  payload_env = { for k, v in { SORTIE_PAYLOAD_BUCKET = local.payload_bucket_url } : k => v if v != null }
}

resource "aws_s3_bucket" "payloads" {
  count         = var.payload_store ? 1 : 0
  bucket        = lower("${var.name}-payloads-${data.aws_caller_identity.current.account_id}")
  force_destroy = false
  tags          = var.tags
}

resource "aws_s3_bucket_server_side_encryption_configuration" "payloads" {
  count  = var.payload_store ? 1 : 0
  bucket = aws_s3_bucket.payloads[0].id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = aws_kms_key.config.arn
    }
    # One data key per bucket, not per object: fewer KMS calls, and the
    # encryption context is the bucket's ARN (see the PayloadBucketKey grant).
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_public_access_block" "payloads" {
  count                   = var.payload_store ? 1 : 0
  bucket                  = aws_s3_bucket.payloads[0].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "payloads" {
  count  = var.payload_store ? 1 : 0
  bucket = aws_s3_bucket.payloads[0].id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "payloads" {
  count  = var.payload_store ? 1 : 0
  bucket = aws_s3_bucket.payloads[0].id
  rule {
    id     = "expire-runs"
    status = "Enabled"
    filter {
      prefix = local.payload_prefix
    }
    expiration {
      days = var.payload_retention_days
    }
    # A large payload is written in parts; a writer that died leaves them.
    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }
}

data "aws_iam_policy_document" "payloads_tls" {
  count = var.payload_store ? 1 : 0
  statement {
    sid       = "DenyPlainHTTP"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.payloads[0].arn, "${aws_s3_bucket.payloads[0].arn}/*"]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "payloads" {
  count  = var.payload_store ? 1 : 0
  bucket = aws_s3_bucket.payloads[0].id
  policy = data.aws_iam_policy_document.payloads_tls[0].json
  # S3 refuses a bucket policy until the public access block is in place.
  depends_on = [aws_s3_bucket_public_access_block.payloads]
}

# Reading and writing the objects under runs/, and what a presigned URL
# does as its signer: GetObject (reads and attributes, GET URLs) and
# PutObject (writes, multipart parts included, PUT URLs); with SSE-KMS,
# S3 asks KMS for the bucket key as the caller, with the bucket's ARN as
# encryption context. For hosts and for the reconciler and trigger
# functions, which sign the URLs of the attempts they launch
# (payload/s3presign).
data "aws_iam_policy_document" "payload_objects" {
  count = var.payload_store ? 1 : 0
  statement {
    sid       = "ReadWritePayloads"
    actions   = ["s3:GetObject", "s3:PutObject"]
    resources = ["${aws_s3_bucket.payloads[0].arn}/${local.payload_prefix}*"]
  }
  statement {
    sid       = "PayloadBucketKey"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.config.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:aws:s3:arn"
      values   = [aws_s3_bucket.payloads[0].arn]
    }
  }
}

# What a presigned DELETE URL does as its signer: DeleteObject under
# runs/ (no KMS: deleting decrypts nothing). For the reconciler
# function, whose retention deletes an expired run's objects through
# DELETE URLs it signs (payload/sealed's Deleter); it lists nothing.
data "aws_iam_policy_document" "payload_deletes" {
  count = var.payload_store ? 1 : 0
  statement {
    sid       = "DeletePayloads"
    actions   = ["s3:DeleteObject"]
    resources = ["${aws_s3_bucket.payloads[0].arn}/${local.payload_prefix}*"]
  }
}

# What else gocloud.dev/blob's s3blob calls for the store, for hosts
# only: AbortMultipartUpload (a failed multipart write), DeleteObject (a
# run's objects) under runs/, and ListBucket (DeleteRun and the sweep).
data "aws_iam_policy_document" "payloads" {
  count = var.payload_store ? 1 : 0
  statement {
    sid       = "ManagePayloads"
    actions   = ["s3:AbortMultipartUpload", "s3:DeleteObject"]
    resources = ["${aws_s3_bucket.payloads[0].arn}/${local.payload_prefix}*"]
  }
  # Not conditioned on s3:prefix: S3 answers a read of a missing object
  # with 404 only to a caller that may list the bucket (403 otherwise,
  # which the store would report as unavailable rather than
  # sortie.ErrNotFound), and a GetObject request carries no s3:prefix.
  # The bucket holds nothing but runs/.
  statement {
    sid       = "ListPayloads"
    actions   = ["s3:ListBucket"]
    resources = [aws_s3_bucket.payloads[0].arn]
  }
}

resource "aws_iam_role_policy" "host_payloads" {
  for_each = var.payload_store ? var.host_roles : toset([])
  name     = "sortie-host-payloads"
  role     = aws_iam_role.host[each.key].id
  policy   = data.aws_iam_policy_document.payloads[0].json
}

resource "aws_iam_role_policy" "host_payload_objects" {
  for_each = var.payload_store ? var.host_roles : toset([])
  name     = "sortie-host-payload-objects"
  role     = aws_iam_role.host[each.key].id
  policy   = data.aws_iam_policy_document.payload_objects[0].json
}

resource "aws_iam_role_policy" "reconciler_payload_objects" {
  count  = var.payload_store ? 1 : 0
  name   = "sortie-reconciler-payload-objects"
  role   = aws_iam_role.reconciler.id
  policy = data.aws_iam_policy_document.payload_objects[0].json
}

resource "aws_iam_role_policy" "reconciler_payload_deletes" {
  count  = var.payload_store ? 1 : 0
  name   = "sortie-reconciler-payload-deletes"
  role   = aws_iam_role.reconciler.id
  policy = data.aws_iam_policy_document.payload_deletes[0].json
}

resource "aws_iam_role_policy" "trigger_payload_objects" {
  count  = var.payload_store ? 1 : 0
  name   = "sortie-trigger-payload-objects"
  role   = aws_iam_role.trigger.id
  policy = data.aws_iam_policy_document.payload_objects[0].json
}
