// Package strictjson decodes JSON the one strict way every Sortie format
// is read: exactly one JSON value, no object field that the target has no
// place for, no object key twice (at any depth), and nothing after the value but JSON whitespace (space, tab,
// CR, LF). [encoding/json.Decoder.More] is not enough for the last rule:
// it reports a stray "}" or "]" after the value as "no more", so
// `{"a":1}}` would pass.
//
// It imports nothing of Sortie, so the root package and every adapter use
// the same helper: worker messages and invocations, page tokens,
// envelopes, key files, callback bodies and claims, trigger rules and the
// operator's manifest, runtime and policy files.
package strictjson
