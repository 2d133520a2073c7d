// Package inputschema compiles agents' input schemas
// ([sortie.Manifest.InputSchema], JSON Schema draft 2020-12 with
// santhosh-tekuri/jsonschema) and checks submissions' variables against
// them: [Checker] is the engine's [sortie.InputChecker]
// (sortie.EngineOptions.Inputs), which package host (the CLI and `sortie
// serve`) and the Cloud Run container (host/gcphost) set. It is
// a package of its own so that binaries which never load a schema (the
// Lambda bootstrap) do not link the validator.
//
// A schema is one self-contained document: a $ref may only point inside
// it (no file or network is ever read). Regular expressions are RE2 (Go's
// regexp), so matching is linear in the input. Errors are
// [*sortie.ValidationError]s: "agent.input_schema" for a schema that does
// not compile, the field of the first violation ("variables.top",
// "variables.items[0]") for variables that do not satisfy it, with the
// schema's rule as the reason, clipped to 200 bytes (a pattern or format
// violation quotes the string it refused).
package inputschema
