// Package triggers starts runs from cloud events, deduplicated on each
// event's own identity.
//
// [ParseRules] (or [LoadRules]) reads a versioned rules file
// ("sortie.triggers/v1"): which events — by kind, source, type and glob
// patterns over fields of the event's JSON — start which agent, with
// variables and a context ID templated from the event ("${detail.bucket.name}").
// Invalid rules are refused at load time with the rule and the field named.
//
// A [Router] routes [Event]s to a [Submitter] (*sortie.Client,
// *sortie.Engine). Each run's idempotency key is [IdempotencyKey]:
// "trigger/RULE/KIND:IDENTITY" from the event's own identity (EventBridge
// id; S3 bucket, sequencer and key; SQS messageId; SNS MessageId;
// CloudEvents source and id), so a redelivered event starts no second run
// and two rules matching one event start two. An event no rule matches
// starts nothing and is logged with each rule's reason.
//
// [Router.HandleLambda] is the Lambda trigger-mode handler: it detects
// EventBridge events, S3 notifications, SQS batches (answering
// events.SQSEventResponse with batchItemFailures, so only failed records
// are retried) and SNS notifications, with aws-lambda-go's events types.
// CloudEvents over HTTP (Eventarc: Pub/Sub, Cloud Storage) are received by
// package cehttp, which calls [Router.RouteCloudEvent]. [Router.Replay]
// routes an AWS event read from a file ("sortie trigger --event").
package triggers
