package lambda

// Classify exposes the SDK error mapping to the tests.
var Classify = classify
