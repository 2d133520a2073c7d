// Package triggers starts runs from cloud events, deduplicated on each
// event's own identity.
//
// [ParseRules] (or [LoadRules]) reads a versioned rules file
// ("sortie.triggers/v1"): which events — by kind, source, type and glob
// patterns over fields of the event's JSON — start which agent, with
// variables and a context ID templated from the event ("${detail.bucket.name}").
// Invalid rules are refused at load time with the rule and the field named.
//
// A [Router] routes [Event]s to a [Submitter] (*sortie.Engine, the HTTP
// client engine). Each run's idempotency key is [IdempotencyKey]:
// "trigger/RULE/KIND:IDENTITY" from the event's own identity (EventBridge
// id; S3 bucket, sequencer or version ID, and decoded key; SQS messageId;
// SNS MessageId; CloudEvents source and id), so a redelivered event
// starts no second run and two rules matching one event start two. Every
// event and rule gets an [Outcome]: started, existed (an earlier delivery
// started the run, named), unmatched (each rule's reason), rejected
// (undecodable data, a template reading a missing field: a redelivery
// cannot help, so the delivery is acknowledged), ignored (s3:TestEvent)
// or failed (retried).
//
// The values handed to agents are what the event means, not how it was
// carried: S3 object keys are URL-decoded exactly once
// (s3.object.urlDecodedKey, @subject; s3.object.key stays as S3 sent it);
// envelopes unwrap, so S3 records in an SNS message, an SQS body or an
// EventBridge event from S3, and an SNS message in an SQS body, are routed
// each on its own to rules of their kind, with the envelope's message
// identity in theirs; CloudEvent data keeps its bytes (JSON, text, or
// data_base64).
//
// Runs continue their producer's trace: each event routed is a
// "sortie.trigger" span under the trace context it carries (SQS and SNS
// traceparent and tracestate message attributes, the SQS AWSTraceHeader
// of X-Ray, CloudEvents traceparent and tracestate extensions; see
// [Event.TraceParent]), parent of its runs' submissions.
//
// [Router.HandleLambda] is the Lambda trigger-mode handler: it detects
// EventBridge events, S3 notifications, SQS batches (answering
// events.SQSEventResponse with batchItemFailures, so only records a
// redelivery may cure are retried; in a FIFO queue's batch a failed
// record also holds back the later records of its message group, so each
// group's runs start in order) and SNS notifications, with
// aws-lambda-go's events types. CloudEvents over HTTP (Eventarc: Pub/Sub,
// Cloud Storage; any CloudEvents source posting to a host) are received by
// package cehttp, which calls [Router.RouteCloudEvent]. [Router.Replay]
// routes an AWS event read from a file ("sortie trigger --event").
package triggers
