output "region" {
  description = "Region of the deployment (AWS_REGION for clients)."
  value       = data.aws_region.current.name
}

output "table_name" {
  description = "DynamoDB control plane table (SORTIE_DYNAMODB_TABLE; sortie --dynamodb-table)."
  value       = aws_dynamodb_table.runs.name
}

output "table_arn" {
  description = "ARN of the control plane table."
  value       = aws_dynamodb_table.runs.arn
}

output "worker_function_name" {
  description = "Worker function the Lambda launcher invokes (launchers/lambda Options.Function)."
  value       = aws_lambda_function.worker.function_name
}

output "worker_function_arn" {
  description = "ARN of the worker function."
  value       = aws_lambda_function.worker.arn
}

output "reconciler_function_arn" {
  description = "ARN of the reconciler function (on-failure destination and schedule target)."
  value       = aws_lambda_function.reconciler.arn
}

output "trigger_function_arn" {
  description = "ARN of the trigger function."
  value       = aws_lambda_function.trigger.arn
}

output "kms_key_arn" {
  description = "ARN of the inline configuration key."
  value       = aws_kms_key.config.arn
}

output "kms_key_alias" {
  description = "Alias of the inline configuration key."
  value       = aws_kms_alias.config.name
}

output "kms_keys" {
  description = "Keyring value for hosts that seal configuration (SORTIE_KMS_KEYS: LABEL=KEY_ARN)."
  value       = local.kms_keys
}

output "trigger_queue_url" {
  description = "URL of the SQS queue whose messages the trigger function routes to runs."
  value       = aws_sqs_queue.trigger.url
}

output "trigger_queue_kind" {
  description = "Kind of the trigger queue and its dead-letter queue: fifo or standard (variable trigger_queue_fifo)."
  value       = aws_sqs_queue.trigger.fifo_queue ? "fifo" : "standard"
}

output "trigger_dlq_url" {
  description = "URL of the trigger queue's dead-letter queue."
  value       = aws_sqs_queue.trigger_dlq.url
}

output "trigger_event_rule" {
  description = "Name of the EventBridge rule feeding the trigger function."
  value       = aws_cloudwatch_event_rule.trigger.name
}

output "trigger_sns_subscriptions" {
  description = "ARNs of the trigger function's SNS subscriptions, by topic ARN."
  value       = { for arn, s in aws_sns_topic_subscription.trigger : arn => s.arn }
}

output "trigger_s3_buckets" {
  description = "Names of the buckets whose notifications invoke the trigger function."
  value       = keys(aws_s3_bucket_notification.trigger)
}

output "host_role_arns" {
  description = "ARNs of the `sortie serve` host roles, by kind (ecs, ec2), those host_roles names."
  value       = { for k, r in aws_iam_role.host : k => r.arn }
}

output "host_instance_profile" {
  description = "Name of the EC2 instance profile of the host role, or null without \"ec2\" in host_roles."
  value       = one(aws_iam_instance_profile.host[*].name)
}

output "cloudrun_worker_role_arn" {
  description = "ARN of the role the Cloud Run worker assumes with its Google ID token (SORTIE_AWS_ROLE_ARN; terraform/gcp's aws_role_arn), or null without gcp_worker_service_account_id."
  value       = one(aws_iam_role.cloudrun_worker[*].arn)
}

output "page_token_key_sealed" {
  description = "The deployment's page-token key sealed by its KMS key (purpose page-token-key): set SORTIE_PAGE_TOKEN_KEY_SEALED to it on every host and CLI of the deployment."
  value       = aws_kms_ciphertext.page_token_key.ciphertext_blob
}

output "payload_bucket_url" {
  description = "URL of the payload store's bucket for hosts (SORTIE_PAYLOAD_BUCKET; sortie serve --payload-bucket: s3://BUCKET?region=REGION), or null without payload_store."
  value       = local.payload_bucket_url
}
