// Package cehttp receives CloudEvents over HTTP — binary and structured
// modes, as Eventarc delivers Pub/Sub messages and Cloud Storage object
// events to a Cloud Run service — and routes them with a
// [triggers.Router].
//
// [NewHandler] is the http.Handler the Cloud Run binary mounts;
// [ParseJSON] reads a structured-mode event from bytes (the CLI's
// replay); [FromEvent] converts the SDK's event. It is a package of its
// own so the Lambda binary, which imports package triggers, does not link
// the CloudEvents SDK.
package cehttp
