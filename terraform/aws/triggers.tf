# Events that start runs: an EventBridge rule, an SQS queue (with a
# dead-letter queue) and, optionally, S3 bucket notifications and SNS
# subscriptions feed the trigger function, which routes them by the rules
# file to runs. SQS batches report partial failures (batchItemFailures), so
# only messages whose run could not be started are delivered again; a
# rejected message (undecodable, or a template reading a missing field) is
# acknowledged, with the rejection in the function's log.
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

# The trigger queue is a standard queue unless trigger_queue_fifo is set:
# then it and its dead-letter queue are FIFO queues (names ending in
# .fifo, content-based deduplication), and the trigger function keeps each
# message group's order: after a failed message it reports that message
# and every later one of its group in the batch, and starts none of them.
locals {
  trigger_queue_suffix = var.trigger_queue_fifo ? ".fifo" : ""
}

resource "aws_sqs_queue" "trigger_dlq" {
  name                        = "${var.name}-trigger-dlq${local.trigger_queue_suffix}"
  fifo_queue                  = var.trigger_queue_fifo
  content_based_deduplication = var.trigger_queue_fifo
  message_retention_seconds   = 1209600
  sqs_managed_sse_enabled     = true
  tags                        = var.tags
}

resource "aws_sqs_queue" "trigger" {
  name                        = "${var.name}-trigger${local.trigger_queue_suffix}"
  fifo_queue                  = var.trigger_queue_fifo
  content_based_deduplication = var.trigger_queue_fifo
  visibility_timeout_seconds  = 6 * aws_lambda_function.trigger.timeout
  sqs_managed_sse_enabled     = true
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

# Optional: S3 buckets whose object events invoke the trigger function
# directly (asynchronously: Lambda retries a failed invocation twice; the
# function answers success for rejected and unmatched events). S3 checks
# the permission when the notification is put, hence depends_on.
resource "aws_lambda_permission" "trigger_s3" {
  for_each       = var.trigger_s3_notifications
  statement_id   = "sortie-trigger-s3-${md5(each.key)}"
  action         = "lambda:InvokeFunction"
  function_name  = aws_lambda_function.trigger.function_name
  principal      = "s3.amazonaws.com"
  source_arn     = "arn:${data.aws_partition.current.partition}:s3:::${each.key}"
  source_account = data.aws_caller_identity.current.account_id
}

resource "aws_s3_bucket_notification" "trigger" {
  for_each = var.trigger_s3_notifications
  bucket   = each.key

  lambda_function {
    lambda_function_arn = aws_lambda_function.trigger.arn
    events              = each.value.events
    filter_prefix       = each.value.filter_prefix
    filter_suffix       = each.value.filter_suffix
  }

  depends_on = [aws_lambda_permission.trigger_s3]
}

# Optional: SNS topics the trigger function subscribes to. An S3
# notification carried by a topic (S3 → SNS → Lambda fan-out) is unwrapped
# and each of its records routed on its own.
resource "aws_lambda_permission" "trigger_sns" {
  for_each      = toset(var.trigger_sns_topics)
  statement_id  = "sortie-trigger-sns-${md5(each.value)}"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.trigger.function_name
  principal     = "sns.amazonaws.com"
  source_arn    = each.value
}

resource "aws_sns_topic_subscription" "trigger" {
  for_each  = toset(var.trigger_sns_topics)
  topic_arn = each.value
  protocol  = "lambda"
  endpoint  = aws_lambda_function.trigger.arn

  depends_on = [aws_lambda_permission.trigger_sns]
}
