# One deployment package, three functions: one per mode of cmd/sortie-lambda
# (SORTIE_LAMBDA_MODE), each with its own role, so each gets only what its
# mode calls.
locals {
  package_hash = filebase64sha256(var.lambda_zip)
  kms_keys     = "${var.kms_key_label}=${aws_kms_key.config.arn}"

  common_env = {
    SORTIE_DYNAMODB_TABLE = aws_dynamodb_table.runs.name
    SORTIE_KMS_KEYS       = local.kms_keys
    SORTIE_LOG_LEVEL      = var.log_level
  }

  functions = {
    worker     = "${var.name}-worker"
    reconciler = "${var.name}-reconciler"
    trigger    = "${var.name}-trigger"
  }
}

resource "aws_cloudwatch_log_group" "fn" {
  for_each          = local.functions
  name              = "/aws/lambda/${each.value}"
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

resource "aws_lambda_function" "worker" {
  function_name    = local.functions.worker
  role             = aws_iam_role.worker.arn
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = [var.architecture]
  filename         = var.lambda_zip
  source_code_hash = local.package_hash
  memory_size      = var.worker_memory_mb
  timeout          = var.worker_timeout_s
  # A cap on parallel attempts, so a burst of workers cannot take the
  # concurrency the reconciler and trigger functions (the recovery path)
  # need; throttled attempts wait in Lambda's queue (worker_max_event_age_s).
  reserved_concurrent_executions = var.worker_reserved_concurrency

  environment {
    variables = merge(local.common_env, {
      SORTIE_LAMBDA_MODE        = "worker"
      SORTIE_CONFIG_ENV         = join(",", var.config_env)
      SORTIE_ALLOW_DESTINATIONS = join(",", var.allow_destinations)
      SORTIE_CONFIG_REFS        = var.config_refs
    })
  }

  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.fn["worker"].name
  }

  tags = var.tags
}

# Sortie owns retries (the run's retry policy): Lambda must not retry an
# attempt. A failed or too old invocation goes to the reconciler, which ends
# the attempt it names.
resource "aws_lambda_function_event_invoke_config" "worker" {
  function_name                = aws_lambda_function.worker.function_name
  maximum_retry_attempts       = 0
  maximum_event_age_in_seconds = var.worker_max_event_age_s

  destination_config {
    on_failure {
      destination = aws_lambda_function.reconciler.arn
    }
  }
}

resource "aws_lambda_function" "reconciler" {
  function_name    = local.functions.reconciler
  role             = aws_iam_role.reconciler.arn
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = [var.architecture]
  filename         = var.lambda_zip
  source_code_hash = local.package_hash
  memory_size      = 512
  # The reconciler loops until a pass finds nothing due (a backlog drains
  # 100 runs a pass) or this, less 10 s, has passed, launching the retries
  # due meanwhile.
  timeout                        = var.reconciler_timeout_s
  reserved_concurrent_executions = var.reconciler_reserved_concurrency

  environment {
    # With the payload store, the attempts it relaunches get presigned
    # URLs of the bucket, as a host's do, and its retention deletes the
    # objects of the runs it expires (it signs the URLs: see payloads.tf).
    variables = merge(local.common_env, {
      SORTIE_LAMBDA_MODE            = "reconciler"
      SORTIE_WORKER_FUNCTION        = aws_lambda_function.worker.arn
      SORTIE_WORKER_MAX_EVENT_AGE_S = tostring(var.worker_max_event_age_s)
      SORTIE_RETENTION              = var.run_retention
    }, local.payload_env)
  }

  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.fn["reconciler"].name
  }

  tags = var.tags
}

resource "aws_lambda_function" "trigger" {
  function_name                  = local.functions.trigger
  role                           = aws_iam_role.trigger.arn
  runtime                        = "provided.al2023"
  handler                        = "bootstrap"
  architectures                  = [var.architecture]
  filename                       = var.lambda_zip
  source_code_hash               = local.package_hash
  memory_size                    = 512
  timeout                        = 60
  reserved_concurrent_executions = var.trigger_reserved_concurrency

  environment {
    # With the payload store, the attempts it launches get presigned URLs
    # of the bucket (it signs them: see payloads.tf), so a result over
    # the inline limit is kept by reference.
    variables = merge(local.common_env, {
      SORTIE_LAMBDA_MODE            = "trigger"
      SORTIE_WORKER_FUNCTION        = aws_lambda_function.worker.arn
      SORTIE_TRIGGER_RULES          = var.trigger_rules_file
      SORTIE_WORKER_MAX_EVENT_AGE_S = tostring(var.worker_max_event_age_s)
      SORTIE_CONFIG_REFS            = var.config_refs
    }, local.payload_env)
  }

  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.fn["trigger"].name
  }

  tags = var.tags
}

# The reconciler's schedule: expired leases and due retries.
resource "aws_cloudwatch_event_rule" "reconcile" {
  name                = "${var.name}-reconcile"
  description         = "Sortie ${var.name}: run the reconciler"
  schedule_expression = var.reconciler_schedule
  tags                = var.tags
}

resource "aws_cloudwatch_event_target" "reconcile" {
  rule = aws_cloudwatch_event_rule.reconcile.name
  arn  = aws_lambda_function.reconciler.arn
}

resource "aws_lambda_permission" "reconcile_schedule" {
  statement_id  = "sortie-reconcile-schedule"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.reconciler.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.reconcile.arn
}
