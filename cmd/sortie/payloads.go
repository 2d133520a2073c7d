package main

// The bucket drivers --payload-bucket takes (gocloud.dev/blob URLs): s3://
// (Amazon S3 and S3-protocol servers) and gs:// (Cloud Storage).
import (
	_ "gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/s3blob"
)
