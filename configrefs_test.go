package sortie

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSubmitRequestChecksConfigRefs(t *testing.T) {
	many := make([]string, MaxConfigRefs+1)
	for i := range many {
		many[i] = fmt.Sprintf("ref-%d", i)
	}
	for name, refs := range map[string][]string{
		"too many": many, "twice": {"db", "db"}, "a path": {"/etc/secret"}, "upper case": {"DB"}, "empty": {""},
	} {
		r := &SubmitRequest{Agent: "a", ConfigRefs: refs}
		var ve *ValidationError
		if err := r.Validate(); !errors.As(err, &ve) || ve.Field != "config_refs" {
			t.Errorf("%s: Validate() = %v, want a ValidationError for config_refs", name, err)
		}
	}
	if err := (&SubmitRequest{Agent: "a", ConfigRefs: []string{"db", "openai.key"}}).Validate(); err != nil {
		t.Errorf("Validate(two good references) = %v", err)
	}
	a := (&SubmitRequest{Agent: "a", ConfigRefs: []string{"db"}}).Hash()
	if b := (&SubmitRequest{Agent: "a", ConfigRefs: []string{"other"}}).Hash(); a == b {
		t.Errorf("requests with other configuration references hash alike: a retry with the same key must not change them")
	}
}

func TestConfigRefsFromMetadata(t *testing.T) {
	got, err := ConfigRefsFromMetadata("message.metadata", map[string]any{MetaConfigRefs: []any{"db", "openai"}, "x": 1})
	if err != nil || strings.Join(got, ",") != "db,openai" {
		t.Errorf("ConfigRefsFromMetadata = %v, %v; want [db openai]", got, err)
	}
	for _, v := range []any{"db", []any{1}, []any{"BAD"}} {
		var ve *ValidationError
		_, err := ConfigRefsFromMetadata("message.metadata", map[string]any{MetaConfigRefs: v})
		if !errors.As(err, &ve) || ve.Field != "message.metadata."+MetaConfigRefs {
			t.Errorf("ConfigRefsFromMetadata(%v) = %v, want a ValidationError for message.metadata.%s", v, err, MetaConfigRefs)
		}
	}
	labels, err := MetadataLabels("metadata", map[string]any{MetaConfigRefs: []any{"db"}, "team": "a"})
	if err != nil || len(labels) != 1 || labels["team"] != "a" {
		t.Errorf("MetadataLabels = %v, %v; want only team (the references are not labels)", labels, err)
	}
	for _, md := range []map[string]any{{"te\x1bam": "a"}, {"team": "a\nFORGED LINE"}} {
		var ve *ValidationError
		if _, err := MetadataLabels("metadata", md); !errors.As(err, &ve) || !strings.HasPrefix(ve.Field, "metadata") || !strings.Contains(ve.Reason, "control characters") {
			t.Errorf("MetadataLabels(%q) = %v, want a ValidationError on metadata naming control characters", md, err)
		}
	}
}
