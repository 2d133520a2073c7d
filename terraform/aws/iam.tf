# Least privilege, per function. The contract test in terraform/ derives
# the DynamoDB, KMS and Lambda actions from the Go interfaces the code
# calls through (dynamo.API, awskms.API, launchers/lambda.API) and checks
# these documents allow exactly those, plus the infrastructure actions
# (logs, SQS polling, the on-failure destination) named in the test.
#
# Item actions are limited by dynamodb:LeadingKeys to the control plane's
# partitions (dynamo.KeyPrefixes: RUN#…, IDEM#…, IDEMX#…, CTL#…, RPL#…); index
# queries cannot be (index partitions are agents, states, shards and
# context IDs), so only the reconciler and the trigger get them, on this
# table's indexes only.
# kms:Decrypt is conditioned on the envelope's purpose: only the worker
# opens invocation-config envelopes; the engine side (reconciler, trigger)
# opens config-at-rest ones to re-seal them per attempt. The worker seals
# and opens step-result envelopes (secret durable steps), nothing else.

data "aws_iam_policy_document" "assume_lambda" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "worker" {
  name               = "${var.name}-worker"
  assume_role_policy = data.aws_iam_policy_document.assume_lambda.json
  tags               = var.tags
}

resource "aws_iam_role" "reconciler" {
  name               = "${var.name}-reconciler"
  assume_role_policy = data.aws_iam_policy_document.assume_lambda.json
  tags               = var.tags
}

resource "aws_iam_role" "trigger" {
  name               = "${var.name}-trigger"
  assume_role_policy = data.aws_iam_policy_document.assume_lambda.json
  tags               = var.tags
}

resource "aws_iam_role_policy" "worker" {
  name   = "sortie-worker"
  role   = aws_iam_role.worker.id
  policy = data.aws_iam_policy_document.worker.json
}

resource "aws_iam_role_policy" "reconciler" {
  name   = "sortie-reconciler"
  role   = aws_iam_role.reconciler.id
  policy = data.aws_iam_policy_document.reconciler.json
}

resource "aws_iam_role_policy" "trigger" {
  name   = "sortie-trigger"
  role   = aws_iam_role.trigger.id
  policy = data.aws_iam_policy_document.trigger.json
}

data "aws_iam_policy_document" "worker" {
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
    sid       = "OpenInvocationConfig"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.config.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:purpose"
      values   = ["invocation-config"]
    }
  }
  # Secret durable steps: the worker seals a step's result and the workers
  # of later attempts open it (purpose step-result only).
  statement {
    sid       = "SealStepResults"
    actions   = ["kms:GenerateDataKey"]
    resources = [aws_kms_key.config.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:purpose"
      values   = ["step-result"]
    }
  }
  statement {
    sid       = "OpenStepResults"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.config.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:purpose"
      values   = ["step-result"]
    }
  }
  # Payloads by reference (package payload/sealed): the worker opens the
  # run's variables and seals its result (purpose run-payload only).
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
    sid       = "OnFailureDestination"
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.reconciler.arn]
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.fn["worker"].arn}:*"]
  }
}

data "aws_iam_policy_document" "reconciler" {
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
    sid       = "SealInvocationConfig"
    actions   = ["kms:GenerateDataKey"]
    resources = [aws_kms_key.config.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:purpose"
      values   = ["invocation-config"]
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
  statement {
    sid       = "LaunchAttempts"
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.worker.arn]
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.fn["reconciler"].arn}:*"]
  }
}

data "aws_iam_policy_document" "trigger" {
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
  statement {
    sid       = "LaunchAttempts"
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.worker.arn]
  }
  statement {
    sid       = "PollTriggerQueue"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"]
    resources = [aws_sqs_queue.trigger.arn]
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.fn["trigger"].arn}:*"]
  }
}

# Configuration references: the worker's role reads exactly the Secrets
# Manager secrets the allowlist (var.config_refs) names, and nothing when
# it names none. A secret named by name matches its ARN's random suffix.
locals {
  config_refs = try(jsondecode(var.config_refs).refs, {})
  config_ref_secrets = distinct([
    for ref in values(local.config_refs) : (
      substr(ref.aws_secret, 0, 4) == "arn:" ? ref.aws_secret :
      "arn:${data.aws_partition.current.partition}:secretsmanager:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:secret:${ref.aws_secret}-??????"
    ) if try(ref.aws_secret, "") != ""
  ])
}

data "aws_iam_policy_document" "worker_config_secrets" {
  count = length(local.config_ref_secrets) > 0 ? 1 : 0
  statement {
    sid       = "ReadConfigRefSecrets"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = local.config_ref_secrets
  }
}

resource "aws_iam_role_policy" "worker_config_secrets" {
  count  = length(local.config_ref_secrets) > 0 ? 1 : 0
  name   = "sortie-worker-config-secrets"
  role   = aws_iam_role.worker.id
  policy = data.aws_iam_policy_document.worker_config_secrets[0].json
}
