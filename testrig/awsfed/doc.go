// Package awsfed is the other side of workload identity federation from
// Google Cloud to AWS, for tests: a Google metadata server's identity
// endpoint ([StartMetadata]) and an AWS STS endpoint answering
// AssumeRoleWithWebIdentity ([StartSTS]), both real HTTP servers on
// loopback.
//
// The metadata server answers GET
// /computeMetadata/v1/instance/service-accounts/default/identity?audience=A
// (with the header "Metadata-Flavor: Google", as the real one requires)
// with a fresh opaque token bound to audience A; point the
// cloud.google.com/go/compute/metadata client at it with GCE_METADATA_HOST
// = [Metadata.Host]. The STS endpoint speaks the STS query protocol (a
// form POST with Action=AssumeRoleWithWebIdentity, an XML answer) and
// accepts a token only when its check (for example [Metadata.Check] with
// the audience the role trusts) passes, as the role's trust policy would;
// otherwise it answers AccessDenied. Point the AWS SDK at it with
// AWS_ENDPOINT_URL_STS = [STS.Endpoint].
package awsfed
