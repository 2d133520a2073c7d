package triggers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/triggers"
)

// Invalid rules are refused at load time with the rule and the field named.
func TestParseRulesRefusesInvalidRulesNamingRuleAndField(t *testing.T) {
	const ok = `{"name":"a","match":{"kind":"s3"},"agent":"probe"}`
	file := func(rules ...string) string {
		return `{"version":"sortie.triggers/v1","rules":[` + strings.Join(rules, ",") + `]}`
	}
	for _, tc := range []struct {
		name, file, field, reason string
	}{
		{"version", `{"version":"v0","rules":[` + ok + `]}`, "version", `want "sortie.triggers/v1"`},
		{"unknown top field", `{"version":"sortie.triggers/v1","rulez":[]}`, "rules", `unknown field "rulez"`},
		{"no rules", file(), "rules", "0 rules"},
		{"trailing brace", file(ok) + "}", "rules", "data after the JSON value"},
		{"trailing bracket", file(ok) + "]", "rules", "data after the JSON value"},
		{"two files", file(ok) + file(ok), "rules", "data after the JSON value"},
		{"unknown rule field", file(ok, `{"name":"b","match":{"kind":"s3"},"agent":"probe","vars":{}}`), "rules[1]", `rule "b": json: unknown field "vars"`},
		{"unknown match field", file(`{"name":"c","match":{"kind":"s3","detail":"x"},"agent":"probe"}`), "rules[0]", `unknown field "detail"`},
		{"bad name", file(`{"name":"Bad Name","match":{"kind":"s3"},"agent":"probe"}`), "rules[0].name", `rule "Bad Name"`},
		{"duplicate name", file(ok, ok), "rules[1].name", "already used by rules[0]"},
		{"no agent", file(`{"name":"d","match":{"kind":"s3"}}`), "rules[0].agent", `rule "d"`},
		{"empty match", file(`{"name":"e","match":{},"agent":"probe"}`), "rules[0].match", "at least one of"},
		{"kind", file(`{"name":"f","match":{"kind":"kinesis"},"agent":"probe"}`), "rules[0].match.kind", `"kinesis"`},
		{"type glob", file(`{"name":"g","match":{"type":"x\\"},"agent":"probe"}`), "rules[0].match.type", "unfinished escape"},
		{"field glob", file(`{"name":"h","match":{"fields":{"detail.x":"\\"}},"agent":"probe"}`), "rules[0].match.fields.detail.x", "unfinished escape"},
		{"field path", file(`{"name":"i","match":{"fields":{"detail..x":"*"}},"agent":"probe"}`), "rules[0].match.fields", "empty segment"},
		{"variables type", file(`{"name":"j","match":{"kind":"s3"},"agent":"probe","variables":[1]}`), "rules[0].variables", "JSON object"},
		{"variable template", file(`{"name":"k","match":{"kind":"s3"},"agent":"probe","variables":{"a":{"b":"${s3.bucket"}}}`), "rules[0].variables.a.b", "unclosed ${"},
		{"context template", file(`{"name":"l","match":{"kind":"s3"},"agent":"probe","context_id":"${}"}`), "rules[0].context_id", "empty field path"},
		{"config ref", file(`{"name":"m","match":{"kind":"s3"},"agent":"probe","config_refs":["/etc/passwd"]}`), "rules[0].config_refs", `rule "m"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := triggers.ParseRules([]byte(tc.file))
			var ve *sortie.ValidationError
			if !errors.As(err, &ve) || ve.Field != tc.field || !strings.Contains(ve.Reason, tc.reason) {
				t.Fatalf("ParseRules(%s) = %v, want a ValidationError on %q saying %q", tc.file, err, tc.field, tc.reason)
			}
		})
	}
}

func TestParseRulesRefusesOversizeFiles(t *testing.T) {
	big := make([]byte, triggers.MaxRulesBytes+1)
	if _, err := triggers.ParseRules(big); !errors.Is(err, sortie.ErrInvalidArgument) || !strings.Contains(err.Error(), "limit") {
		t.Errorf("ParseRules(%d bytes) = %v, want ErrInvalidArgument naming the limit", len(big), err)
	}
}

func TestLoadRulesReadsTheExamples(t *testing.T) {
	for _, p := range []string{"testdata/rules.json", "../../examples/triggers/rules.json"} {
		rules, err := triggers.LoadRules(p)
		if err != nil || rules.Len() == 0 {
			t.Errorf("LoadRules(%s) = %v rules, %v; want valid rules", p, rules, err)
		}
	}
}

// A rule naming a configuration reference the host does not allow for its
// agent is refused when the rules are checked at load, before any event.
func TestRulesCheckConfigRefs(t *testing.T) {
	rules, err := triggers.ParseRules([]byte(`{"version":"sortie.triggers/v1","rules":[
		{"name":"a","match":{"kind":"s3"},"agent":"probe"},
		{"name":"b","match":{"kind":"s3"},"agent":"probe","config_refs":["db"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	allow, err := functions.LoadConfigRefs(`{"version":"sortie.configrefs/v1","refs":{"db":{"var":"DB","env":"DB"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := rules.CheckConfigRefs(allow); err != nil {
		t.Errorf("CheckConfigRefs(an allowlist with db) = %v, want nil", err)
	}
	var ve *sortie.ValidationError
	for _, c := range []sortie.ConfigRefChecker{nil, &functions.ConfigRefs{}} {
		if err := rules.CheckConfigRefs(c); !errors.As(err, &ve) || ve.Field != "rules[1].config_refs" || !strings.Contains(ve.Reason, `"db"`) {
			t.Errorf("CheckConfigRefs(%v) = %v, want a ValidationError for rules[1].config_refs naming db", c, err)
		}
	}
}

// recordingSubmitter keeps the requests it is handed and starts no run.
type recordingSubmitter struct{ reqs []*sortie.SubmitRequest }

func (r *recordingSubmitter) SubmitCreated(_ context.Context, req *sortie.SubmitRequest) (*sortie.Run, bool, error) {
	r.reqs = append(r.reqs, req)
	return &sortie.Run{ID: sortie.NewRunID(time.Now())}, true, nil
}

// The runs a rule starts name its configuration references.
func TestRouteSubmitsTheRulesConfigRefs(t *testing.T) {
	rules, err := triggers.ParseRules([]byte(`{"version":"sortie.triggers/v1","rules":[
		{"name":"b","match":{"kind":"s3"},"agent":"probe","config_refs":["db","openai"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sub := &recordingSubmitter{}
	ev := &triggers.Event{Kind: triggers.KindS3, ID: "e-1", Source: "aws:s3", Type: "ObjectCreated:Put", Doc: map[string]any{}}
	if _, err := triggers.NewRouter(rules, sub, nil).Route(context.Background(), ev); err != nil {
		t.Fatalf("Route = %v", err)
	}
	if len(sub.reqs) != 1 || strings.Join(sub.reqs[0].ConfigRefs, ",") != "db,openai" {
		t.Errorf("submitted %+v, want one request naming db and openai", sub.reqs)
	}
}
