package main

// The bucket drivers --payload-bucket takes (gocloud.dev/blob URLs).
import _ "gocloud.dev/blob/s3blob"
