// Package jsonbody compiles the JSON Schemas (draft 2020-12,
// santhosh-tekuri/jsonschema/v6) of a server's request bodies from an
// embedded file system, and validates bodies against them with errors that
// name the field ("events[0].seq", "labels.team") as a
// [*sortie.ValidationError]. Nothing is loaded from anywhere else: the
// compiler's loader refuses every URL.
package jsonbody
