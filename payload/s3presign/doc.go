// Package s3presign signs presigned S3 GET, PUT and DELETE URLs of a
// payload bucket with the AWS SDK's Signature Version 4 signer alone
// (aws/signer/v4: UNSIGNED-PAYLOAD, service "s3"), without an S3 client.
//
// Package payload signs its URLs through gocloud.dev/blob's s3blob,
// whose S3 client would take the Lambda bootstrap over its size limit; the
// Lambda reconciler and trigger functions, which launch attempts and must
// grant them their payload URLs, sign with a [Signer] instead; the
// reconciler's retention also deletes an expired run's objects through
// DELETE URLs it signs (payload/sealed's Deleter). A Signer takes
// the same bucket URL as package payload's OpenURL (s3://BUCKET?region=…,
// with s3blob's endpoint, use_path_style, hostname_immutable,
// disable_https and dualstack parameters) and makes the same URLs s3blob
// makes for the same bucket, key, credentials and time: virtual-hosted
// (BUCKET.s3.REGION.amazonaws.com) when the bucket name allows it, else
// path-style. It implements payload/sealed's URLSigner, so the grant rule
// (sealed.Grant: which objects an attempt may read and write) is the
// host's.
//
// A presigned URL acts with its signer's permissions: the signer's role
// needs s3:GetObject and s3:PutObject on the objects (and the bucket's
// SSE-KMS key for S3), and s3:DeleteObject for DELETE URLs; a URL signed
// with temporary credentials stops working when they expire.
package s3presign
