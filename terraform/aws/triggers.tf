# Events that start runs: an EventBridge rule and an SQS queue (with a
# dead-letter queue) feed the trigger function, which routes them by the
# rules file to runs. SQS batches report partial failures
# (batchItemFailures), so only the failed messages are delivered again.
resource "aws_cloudwatch_event_rule" "trigger" {
  name          = "${var.name}-trigger"
  description   = "Sortie ${var.name}: events routed to runs by the trigger rules"
  event_pattern = var.trigger_event_pattern
  tags          = var.tags
}

resource "aws_cloudwatch_event_target" "trigger" {
  rule = aws_cloudwatch_event_rule.trigger.name
  arn  = aws_lambda_function.trigger.arn
}

resource "aws_lambda_permission" "trigger_events" {
  statement_id  = "sortie-trigger-events"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.trigger.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.trigger.arn
}

resource "aws_sqs_queue" "trigger_dlq" {
  name                      = "${var.name}-trigger-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
  tags                      = var.tags
}

resource "aws_sqs_queue" "trigger" {
  name                       = "${var.name}-trigger"
  visibility_timeout_seconds = 6 * aws_lambda_function.trigger.timeout
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.trigger_dlq.arn
    maxReceiveCount     = var.trigger_queue_max_receive_count
  })
  tags = var.tags
}

resource "aws_lambda_event_source_mapping" "trigger_queue" {
  event_source_arn        = aws_sqs_queue.trigger.arn
  function_name           = aws_lambda_function.trigger.arn
  batch_size              = 10
  function_response_types = ["ReportBatchItemFailures"]
}
