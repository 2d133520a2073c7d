// Package textstats is the example agent behind `sortie run examples/textstats`:
// word and sentence statistics and the top terms of a text, with progress
// events while it reads.
//
// Variables (a JSON object, all optional):
//
//	document  string  opaque ID of a text shipped with the agent; defaults to "opticks"
//	text      string  inline text to analyse instead (at most 200,000 characters)
//	top       int     how many top terms to return; defaults to 10, at most 100
//
// Documents are embedded in the binary and chosen by ID from an allowlist;
// no path from the request is ever opened. [Register] adds the handler as
// runtime "go:textstats" to a [functions.Registry].
package textstats
