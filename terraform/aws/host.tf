# A role for a `sortie serve` host off Lambda (host_roles): an ECS task role
# ("ecs") and an EC2 instance profile ("ec2"), with one least-privilege
# policy: what the host calls (the contract test in terraform/ derives it
# from the same Go interfaces as the functions' policies). The host keeps
# runs in the table (items and the list, context and lease indexes), seals
# inline configuration (kms:GenerateDataKey for both purposes), opens the
# copy at rest to re-seal it per attempt (kms:Decrypt, config-at-rest
# only: it never opens an attempt's envelope) and invokes the worker
# function. Logs and image pulls go through the ECS task execution role or
# the instance's agent, not this role. It also opens the deployment's
# page-token key (kms:Decrypt, purpose page-token-key only), seals and
# opens payloads (purpose run-payload only), and reads the table's stream,
# which wakes its followers of runs other processes write.
data "aws_iam_policy_document" "assume_host_ecs" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }
    # Only this account's tasks may assume the role (confused-deputy
    # protection, as the ECS documentation advises for task roles).
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

data "aws_iam_policy_document" "assume_host_ec2" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "host" {
  for_each           = var.host_roles
  name               = "${var.name}-host-${each.key}"
  assume_role_policy = each.key == "ecs" ? data.aws_iam_policy_document.assume_host_ecs.json : data.aws_iam_policy_document.assume_host_ec2.json
  tags               = var.tags
}

resource "aws_iam_role_policy" "host" {
  for_each = var.host_roles
  name     = "sortie-host"
  role     = aws_iam_role.host[each.key].id
  policy   = data.aws_iam_policy_document.host.json
}

resource "aws_iam_instance_profile" "host" {
  count = contains(var.host_roles, "ec2") ? 1 : 0
  name  = "${var.name}-host"
  role  = aws_iam_role.host["ec2"].name
  tags  = var.tags
}

data "aws_iam_policy_document" "host" {
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
  statement {
    sid       = "ControlPlaneIndexes"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.runs.arn}/index/*"]
  }
  statement {
    sid       = "SealConfig"
    actions   = ["kms:GenerateDataKey"]
    resources = [aws_kms_key.config.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:purpose"
      values   = ["config-at-rest", "invocation-config"]
    }
  }
  statement {
    sid       = "OpenConfigAtRest"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.config.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:purpose"
      values   = ["config-at-rest"]
    }
  }
  # Payloads by reference: the host seals variables and opens results
  # (purpose run-payload only).
  statement {
    sid       = "SealPayloads"
    actions   = ["kms:GenerateDataKey"]
    resources = [aws_kms_key.config.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:purpose"
      values   = ["run-payload"]
    }
  }
  statement {
    sid       = "OpenPayloads"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.config.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:purpose"
      values   = ["run-payload"]
    }
  }
  statement {
    sid       = "LaunchAttempts"
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.worker.arn]
  }
  statement {
    sid       = "OpenPageTokenKey"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.config.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:purpose"
      values   = ["page-token-key"]
    }
  }
  statement {
    sid       = "ReadStream"
    actions   = ["dynamodb:DescribeStream", "dynamodb:DescribeTable", "dynamodb:GetRecords", "dynamodb:GetShardIterator"]
    resources = [aws_dynamodb_table.runs.arn, "${aws_dynamodb_table.runs.arn}/stream/*"]
  }
}
