# Workload identity federation for the Cloud Run worker of terraform/gcp
# (gcp_worker_service_account_id): a role that trusts Google-issued ID
# tokens of that one service account, with no stored key. The container
# fetches an ID token for gcp_token_audience from the metadata server and
# calls STS AssumeRoleWithWebIdentity (SORTIE_AWS_ROLE_ARN,
# host/gcphost.AWSCredentials). For accounts.google.com, IAM checks the
# token's azp claim as accounts.google.com:aud (the service account's
# unique ID), its aud claim as accounts.google.com:oaud and its sub claim
# as accounts.google.com:sub (the unique ID again).
#
# The worker reports to the table and nothing else: DynamoDB item actions
# on the control plane's partitions. It opens inline configuration with
# Cloud KMS, not AWS KMS. Without AWS access at all, the worker reports
# over the host's signed callbacks (terraform/gcp with dynamodb_table null).
data "aws_iam_policy_document" "assume_cloudrun_worker" {
  count = var.gcp_worker_service_account_id == null ? 0 : 1
  statement {
    actions = ["sts:AssumeRoleWithWebIdentity"]
    principals {
      type        = "Federated"
      identifiers = ["accounts.google.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "accounts.google.com:aud"
      values   = [var.gcp_worker_service_account_id]
    }
    condition {
      test     = "StringEquals"
      variable = "accounts.google.com:sub"
      values   = [var.gcp_worker_service_account_id]
    }
    condition {
      test     = "StringEquals"
      variable = "accounts.google.com:oaud"
      values   = [var.gcp_token_audience]
    }
  }
}

resource "aws_iam_role" "cloudrun_worker" {
  count              = var.gcp_worker_service_account_id == null ? 0 : 1
  name               = "${var.name}-cloudrun-worker"
  assume_role_policy = data.aws_iam_policy_document.assume_cloudrun_worker[0].json
  tags               = var.tags
}

resource "aws_iam_role_policy" "cloudrun_worker" {
  count  = var.gcp_worker_service_account_id == null ? 0 : 1
  name   = "sortie-cloudrun-worker"
  role   = aws_iam_role.cloudrun_worker[0].id
  policy = data.aws_iam_policy_document.cloudrun_worker.json
}

data "aws_iam_policy_document" "cloudrun_worker" {
  statement {
    sid       = "ControlPlaneItems"
    actions   = ["dynamodb:BatchGetItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:TransactWriteItems", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.runs.arn]
    condition {
      test     = "ForAllValues:StringLike"
      variable = "dynamodb:LeadingKeys"
      values   = ["RUN#*", "IDEM#*", "IDEMX#*", "CTL#*", "RPL#*"]
    }
  }
}
