package triggers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// RulesVersion is the version a rules file declares.
const RulesVersion = "sortie.triggers/v1"

// Limits of a rules file.
const (
	MaxRulesBytes = 1 << 20 // bytes of a rules file
	MaxRules      = 256     // rules in a file
	MaxFields     = 32      // field patterns in one rule
)

// RulesFile is the JSON form of a rules file:
//
//	{"version": "sortie.triggers/v1", "rules": [
//	  {"name": "thumbnails",
//	   "match": {"kind": "s3", "type": "ObjectCreated:*",
//	             "fields": {"s3.bucket.name": "uploads-*"}},
//	   "agent": "thumbnailer",
//	   "variables": {"bucket": "${s3.bucket.name}", "key": "${s3.object.key}"},
//	   "context_id": "${s3.bucket.name}", "config_refs": ["image-api"]}]}
//
// Rules are tried in order; every rule that matches starts its own run.
type RulesFile struct {
	Version string     `json:"version"`
	Rules   []RuleSpec `json:"rules"`
}

// RuleSpec is one rule as written.
type RuleSpec struct {
	// Name identifies the rule: 1-63 of a-z, 0-9, ".", "_", "-", starting
	// with a letter or digit; unique in the file. It scopes idempotency keys.
	Name  string    `json:"name"`
	Match MatchSpec `json:"match"`
	// Agent names the agent a matching event starts.
	Agent string `json:"agent"`
	// Variables is a JSON object whose strings are templates (see
	// [Rules]). Optional; defaults to {}.
	Variables json.RawMessage `json:"variables,omitempty"`
	// ContextID is a template for the run's context ID. Optional.
	ContextID string `json:"context_id,omitempty"`
	// ConfigRefs name the configuration references of the runs the rule
	// starts: IDs of the host's allowlist (not templates). Optional.
	ConfigRefs []string `json:"config_refs,omitempty"`
}

// MatchSpec selects events; every criterion given must hold, and at least
// one must be given. Patterns are globs ("*" any run, "?" one character,
// "\" escapes).
type MatchSpec struct {
	// Kind is one of eventbridge, s3, sqs, sns, cloudevents (exact). Optional.
	Kind Kind `json:"kind,omitempty"`
	// Source is a glob over the event's source. Optional.
	Source string `json:"source,omitempty"`
	// Type is a glob over the event's type. Optional.
	Type string `json:"type,omitempty"`
	// Fields maps field paths (as in templates) to globs over the field's
	// value, which must be a string, number or boolean. Optional.
	Fields map[string]string `json:"fields,omitempty"`
}

// Rules are validated, compiled routing rules.
type Rules struct {
	rules []*rule
}

type rule struct {
	index     int
	name      string
	agent     string
	refs      []string
	kind      Kind
	source    glob
	typ       glob
	fields    []fieldMatch
	variables *valueTemplate
	contextID *template
}

type fieldMatch struct {
	path string
	pat  glob
}

// Len returns the number of rules.
func (r *Rules) Len() int { return len(r.rules) }

// CheckConfigRefs checks every rule's configuration references against
// the host's allowlist, so a rule naming one the host does not allow for
// its agent is refused when the rules are loaded, not at each event. It
// returns a [*sortie.ValidationError] for field "rules[N].config_refs";
// a nil c refuses every reference.
func (r *Rules) CheckConfigRefs(c sortie.ConfigRefChecker) error {
	for _, ru := range r.rules {
		if len(ru.refs) == 0 {
			continue
		}
		err := sortie.Invalidf("config_refs", "%q: this host has no configuration references", ru.refs[0])
		if c != nil {
			err = c.CheckConfigRefs(ru.agent, ru.refs)
		}
		if err != nil {
			return sortie.Invalidf(fmt.Sprintf("rules[%d].config_refs", ru.index), "rule %q: %v", ru.name, err)
		}
	}
	return nil
}

var ruleName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// LoadRules reads and validates the rules file the operator named. Like
// [ParseRules], it returns a [*sortie.ValidationError].
func LoadRules(path string) (*Rules, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("triggers: open rules: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxRulesBytes+1))
	if err != nil {
		return nil, fmt.Errorf("triggers: read rules %s: %w", path, err)
	}
	return ParseRules(b)
}

// ParseRules validates a rules file (at most [MaxRulesBytes], at most
// [MaxRules] rules) and compiles it. Unknown fields, a wrong version, bad
// names, patterns or templates are refused with a [*sortie.ValidationError]
// whose field names the rule ("rules[2].match.type") and whose reason
// names the rule by name.
func ParseRules(b []byte) (*Rules, error) {
	if len(b) > MaxRulesBytes {
		return nil, sortie.Invalidf("rules", "%d bytes, limit %d", len(b), MaxRulesBytes)
	}
	var top struct {
		Version string            `json:"version"`
		Rules   []json.RawMessage `json:"rules"`
	}
	if err := strictjson.Unmarshal(b, &top); err != nil {
		return nil, sortie.Invalidf("rules", "%v", err)
	}
	if top.Version != RulesVersion {
		return nil, sortie.Invalidf("version", "%q, want %q", top.Version, RulesVersion)
	}
	if len(top.Rules) == 0 || len(top.Rules) > MaxRules {
		return nil, sortie.Invalidf("rules", "%d rules, want 1..%d", len(top.Rules), MaxRules)
	}
	out := &Rules{}
	seen := map[string]int{}
	for i, raw := range top.Rules {
		r, err := compileRule(i, raw)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[r.name]; dup {
			return nil, sortie.Invalidf(fmt.Sprintf("rules[%d].name", i), "rule %q: name already used by rules[%d]", r.name, j)
		}
		seen[r.name] = i
		out.rules = append(out.rules, r)
	}
	return out, nil
}

// compileRule validates rules[i].
func compileRule(i int, raw json.RawMessage) (*rule, error) {
	var loose struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(raw, &loose) // for the error messages only
	bad := func(field, format string, args ...any) error {
		return sortie.Invalidf(fmt.Sprintf("rules[%d]%s", i, field), "rule %q: %s", loose.Name, fmt.Sprintf(format, args...))
	}
	var spec RuleSpec
	if err := strictjson.Unmarshal(raw, &spec); err != nil {
		return nil, bad("", "%v", err)
	}
	if !ruleName.MatchString(spec.Name) {
		return nil, bad(".name", "must be 1-63 of a-z 0-9 . _ - starting with a letter or digit")
	}
	if err := (&sortie.SubmitRequest{Agent: spec.Agent}).Validate(); err != nil {
		return nil, bad(".agent", "%v", err)
	}
	if err := (&sortie.SubmitRequest{Agent: spec.Agent, ConfigRefs: spec.ConfigRefs}).Validate(); err != nil {
		return nil, bad(".config_refs", "%v", err)
	}
	r := &rule{index: i, name: spec.Name, agent: spec.Agent, refs: spec.ConfigRefs}
	if err := r.compileMatch(spec.Match, bad); err != nil {
		return nil, err
	}
	if err := r.compileTemplates(spec, bad); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rule) compileMatch(m MatchSpec, bad func(string, string, ...any) error) error {
	if m.Kind == "" && m.Source == "" && m.Type == "" && len(m.Fields) == 0 {
		return bad(".match", "give at least one of kind, source, type, fields")
	}
	if m.Kind != "" && !kinds[m.Kind] {
		return bad(".match.kind", "%q, want eventbridge, s3, sqs, sns or cloudevents", m.Kind)
	}
	r.kind = m.Kind
	var err error
	if r.source, err = optGlob(m.Source); err != nil {
		return bad(".match.source", "%v", err)
	}
	if r.typ, err = optGlob(m.Type); err != nil {
		return bad(".match.type", "%v", err)
	}
	if len(m.Fields) > MaxFields {
		return bad(".match.fields", "%d patterns, limit %d", len(m.Fields), MaxFields)
	}
	for p, pat := range m.Fields {
		if err := checkPath(p); err != nil {
			return bad(".match.fields", "%v", err)
		}
		g, err := compileGlob(pat)
		if err != nil {
			return bad(".match.fields."+p, "%v", err)
		}
		r.fields = append(r.fields, fieldMatch{path: p, pat: g})
	}
	sort.Slice(r.fields, func(a, b int) bool { return r.fields[a].path < r.fields[b].path })
	return nil
}

func optGlob(p string) (glob, error) {
	if p == "" {
		return nil, nil
	}
	return compileGlob(p)
}

func (r *rule) compileTemplates(spec RuleSpec, bad func(string, string, ...any) error) error {
	vars := bytes.TrimSpace(spec.Variables)
	if len(vars) == 0 || bytes.Equal(vars, []byte("null")) {
		vars = []byte("{}")
	}
	doc, err := decodeDoc(vars)
	if _, isObj := doc.(map[string]any); err != nil || !isObj {
		return bad(".variables", "must be a JSON object")
	}
	if r.variables, err = compileValue(doc, "variables"); err != nil {
		var fe fieldErr
		if errors.As(err, &fe) {
			return bad("."+fe.field, "%v", fe.err)
		}
		return bad(".variables", "%v", err)
	}
	if spec.ContextID != "" {
		if r.contextID, err = compileTemplate(spec.ContextID); err != nil {
			return bad(".context_id", "%v", err)
		}
	}
	return nil
}
