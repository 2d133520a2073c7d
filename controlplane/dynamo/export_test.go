package dynamo

// DecodeBody decodes a stored body (deflate-compressed JSON) for tests.
var DecodeBody = decodeBody

// EncodeBody encodes a body as the package stores it, for tests.
var EncodeBody = encodeBody

// Minus is c - o, for tests.
func (c Capacity) Minus(o Capacity) Capacity { return c.minus(o) }
