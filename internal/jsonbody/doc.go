// Package jsonbody compiles JSON Schemas (draft 2020-12,
// santhosh-tekuri/jsonschema/v6) — a server's request bodies from an
// embedded file system ([Compile]), or one schema document ([CompileSchema],
// for example a remote call's result schema) — and validates JSON values
// against them with errors that name the field ("events[0].seq",
// "result.items[0].id") as a [*sortie.ValidationError], never the value.
// Nothing is loaded from anywhere else: the compiler's loader refuses every
// URL.
package jsonbody
