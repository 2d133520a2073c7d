package dynamo

// DecodeBody decodes a stored body (deflate-compressed JSON) for tests.
var DecodeBody = decodeBody
