package sortie

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MetadataLabels turns a caller's metadata (the metadata of a remote
// call or an A2A message) into run labels: each key a label, a string
// value as it is and any other value as its JSON. [MetaConfigRefs] and
// the keys in skip are left out. It returns nil for no metadata, and a [*ValidationError] for field
// (or field.KEY) beyond a run's label limits: [MaxLabels] keys of 1 to
// [MaxLabelKeyBytes] bytes, values of at most [MaxLabelValueBytes].
func MetadataLabels(field string, md map[string]any, skip ...string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range md {
		if k == MetaConfigRefs || slices.Contains(skip, k) {
			continue
		}
		if !labelKeyOK(k) {
			return nil, invalidf(field, "key %.63q: keys must be 1-%d bytes of UTF-8 without control characters (metadata becomes the run's labels)", k, MaxLabelKeyBytes)
		}
		s, ok := v.(string)
		if !ok {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, invalidf(field+"."+k, "not representable as JSON")
			}
			s = string(b)
		}
		if !labelValueOK(s) {
			return nil, invalidf(field+"."+k, "%d bytes, limit %d of UTF-8 without control characters (a string, or the JSON of another value)", len(s), MaxLabelValueBytes)
		}
		out[k] = s
	}
	if len(out) > MaxLabels {
		return nil, invalidf(field, "%d keys, limit %d (metadata becomes the run's labels)", len(out), MaxLabels)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// SameMetadata checks that a follow-up's metadata (as for
// [MetadataLabels]) is run's labels: a resumed run keeps the labels it was
// submitted with. No metadata is always fine. It returns a
// [*ValidationError] for field.
func SameMetadata(field string, run *Run, md map[string]any, skip ...string) error {
	l, err := MetadataLabels(field, md, skip...)
	if err != nil || l == nil {
		return err
	}
	if !maps.Equal(l, run.Labels) {
		return invalidf(field, "task %s keeps the metadata it started with; a follow-up message cannot change it", run.ID)
	}
	return nil
}

// ConfigRefsFromMetadata returns the configuration references that
// metadata names under [MetaConfigRefs] (nil when absent): a list of
// strings, checked as [SubmitRequest.ConfigRefs]. It returns a
// [*ValidationError] for field + "." + MetaConfigRefs.
func ConfigRefsFromMetadata(field string, md map[string]any) ([]string, error) {
	v, ok := md[MetaConfigRefs]
	if !ok {
		return nil, nil
	}
	field += "." + MetaConfigRefs
	var refs []string
	switch l := v.(type) {
	case []string:
		refs = l
	case []any:
		for _, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil, invalidf(field, "must be a list of configuration reference IDs (strings)")
			}
			refs = append(refs, s)
		}
	default:
		return nil, invalidf(field, "must be a list of configuration reference IDs (strings)")
	}
	if err := checkConfigRefs(refs); err != nil {
		var ve *ValidationError
		errors.As(err, &ve)
		return nil, invalidf(field, "%s", ve.Reason)
	}
	return refs, nil
}

// labelKeyOK reports whether k is a label key: 1 to [MaxLabelKeyBytes]
// printable bytes.
func labelKeyOK(k string) bool { return k != "" && len(k) <= MaxLabelKeyBytes && printable(k) }

// labelValueOK reports whether v is a label value: at most
// [MaxLabelValueBytes] printable bytes.
func labelValueOK(v string) bool { return len(v) <= MaxLabelValueBytes && printable(v) }

// printable reports whether s is valid UTF-8 without control characters
// (unicode.IsControl: C0, U+0000 to U+001F: NUL, newline, ESC…; DEL,
// U+007F; C1, U+0080 to U+009F: NEL, CSI…). It is the rule of what the CLI, the logs and the
// web UI print as they are (labels, context IDs, idempotency keys), so
// that no value can forge a line or a terminal escape.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}
