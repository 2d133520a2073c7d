package functions

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// ConfigRefsVersion is the format version of a host's configuration
// references file.
const ConfigRefsVersion = "sortie.configrefs/v1"

// maxConfigRefsBytes bounds a configuration references document.
const maxConfigRefsBytes = 256 << 10

// The sources a configuration reference reads its value from
// ([ConfigRef.Source]).
const (
	// SourceEnv is a variable of the worker's own environment.
	SourceEnv = "env"
	// SourceFile is a host-pinned file, read whole (one trailing newline
	// dropped).
	SourceFile = "file"
	// SourceAWSSecret is an AWS Secrets Manager secret (its
	// SecretString, or its SecretBinary), by ARN or name.
	SourceAWSSecret = "aws_secret"
	// SourceGCPSecret is a Google Cloud Secret Manager secret version,
	// "projects/P/secrets/S" (its latest version) or
	// "projects/P/secrets/S/versions/V".
	SourceGCPSecret = "gcp_secret"
)

var sourceKinds = []string{SourceEnv, SourceFile, SourceAWSSecret, SourceGCPSecret}

// ConfigRef is one entry of a host's allowlist of configuration
// references: where the value of an opaque reference ID comes from and
// the variable the handler sees it as.
type ConfigRef struct {
	// Var is the variable the value is given as: in [Call.Config] and in
	// an exec command's environment. An environment variable name.
	Var string
	// Source is one of [SourceEnv], [SourceFile], [SourceAWSSecret] and
	// [SourceGCPSecret]; Name is the variable, the absolute path, the
	// secret's ARN or name, or the secret (version) resource name.
	Source, Name string
	// Agents are the agents whose runs may name the reference. Optional;
	// empty allows every agent.
	Agents []string
}

// ConfigRefs is a host's allowlist of configuration references: the IDs
// a submission may name ([sortie.SubmitRequest.ConfigRefs]), each mapped
// to a [ConfigRef]. The engine checks submissions against it (it is a
// [sortie.ConfigRefChecker]); a [Worker] resolves an attempt's references
// through it. Build it with [LoadConfigRefs] or as a literal.
type ConfigRefs struct {
	// Refs are the references by ID.
	Refs map[string]ConfigRef
	// Secrets fetch the values of [SourceAWSSecret] and [SourceGCPSecret]
	// references, by source. Optional for a checker; a worker without the
	// source a reference needs fails that attempt (error type "config").
	Secrets map[string]SecretSource
	// LookupEnv reads [SourceEnv] references. Optional; defaults to
	// os.LookupEnv.
	LookupEnv func(name string) (string, bool)
}

var _ sortie.ConfigRefChecker = (*ConfigRefs)(nil)

type configRefsFile struct {
	Version string                   `json:"version"`
	Refs    map[string]configRefJSON `json:"refs"`
}

type configRefJSON struct {
	Var       string   `json:"var"`
	Env       string   `json:"env,omitempty"`
	File      string   `json:"file,omitempty"`
	AWSSecret string   `json:"aws_secret,omitempty"`
	GCPSecret string   `json:"gcp_secret,omitempty"`
	Agents    []string `json:"agents,omitempty"`
}

// LoadConfigRefs reads a host's allowlist of configuration references.
// setting is the path of the file, or the JSON document itself when it
// starts with "{" (how the Terraform modules hand it to cloud workers):
//
//	{"version": "sortie.configrefs/v1",
//	 "refs": {"openai": {"var": "OPENAI_API_KEY", "env": "OPENAI_API_KEY"},
//	          "db":     {"var": "DATABASE_URL", "file": "secrets/db-url", "agents": ["report"]},
//	          "stripe": {"var": "STRIPE_KEY", "aws_secret": "arn:aws:secretsmanager:eu-west-1:1:secret:stripe-AbC"},
//	          "github": {"var": "GITHUB_TOKEN", "gcp_secret": "projects/p/secrets/github"}}}
//
// Each reference sets exactly one source. A relative file path resolves
// against the file's directory (the working directory for a document).
// IDs are 1-63 characters of a-z, 0-9, '.', '_' or '-'. Errors are
// [*sortie.ValidationError]s whose field names the ID and field
// ("refs.db.file"); a reference's source is never in a run's error.
func LoadConfigRefs(setting string) (*ConfigRefs, error) {
	if strings.HasPrefix(strings.TrimSpace(setting), "{") {
		return ParseConfigRefs([]byte(setting), ".")
	}
	f, err := os.Open(setting)
	if err != nil {
		return nil, fmt.Errorf("load configuration references: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigRefsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("load configuration references %s: %w", setting, err)
	}
	return ParseConfigRefs(b, filepath.Dir(setting))
}

// ParseConfigRefs parses an allowlist document (see [LoadConfigRefs]);
// relative file paths resolve against base.
func ParseConfigRefs(b []byte, base string) (*ConfigRefs, error) {
	if len(b) > maxConfigRefsBytes {
		return nil, sortie.Invalidf("refs", "%d bytes, limit %d", len(b), maxConfigRefsBytes)
	}
	var f configRefsFile
	if err := strictjson.Unmarshal(bytes.TrimSpace(b), &f); err != nil {
		return nil, sortie.Invalidf("refs", "%v", err)
	}
	if f.Version != ConfigRefsVersion {
		return nil, sortie.Invalidf("version", "%q is not supported (want %q)", f.Version, ConfigRefsVersion)
	}
	abs, err := filepath.Abs(base)
	if err != nil {
		return nil, fmt.Errorf("load configuration references: %w", err)
	}
	out := &ConfigRefs{Refs: make(map[string]ConfigRef, len(f.Refs))}
	for id, r := range f.Refs {
		ref, err := r.ref(id, abs)
		if err != nil {
			return nil, err
		}
		out.Refs[id] = ref
	}
	return out, nil
}

func (r *configRefJSON) ref(id, base string) (ConfigRef, error) {
	field := func(name string) string { return "refs." + id + "." + name }
	if !runtimeIDPattern.MatchString(id) {
		return ConfigRef{}, sortie.Invalidf("refs."+id, "ID %q must be 1-63 characters of a-z, 0-9, '.', '_' or '-'", id)
	}
	if !envKeyPattern.MatchString(r.Var) {
		return ConfigRef{}, sortie.Invalidf(field("var"), "%q must be an environment variable name", r.Var)
	}
	ref := ConfigRef{Var: r.Var, Agents: r.Agents}
	for _, s := range []struct{ kind, name string }{
		{SourceEnv, r.Env}, {SourceFile, r.File}, {SourceAWSSecret, r.AWSSecret}, {SourceGCPSecret, r.GCPSecret},
	} {
		if s.name == "" {
			continue
		}
		if ref.Source != "" {
			return ConfigRef{}, sortie.Invalidf("refs."+id, "sets both %s and %s; one source per reference", ref.Source, s.kind)
		}
		ref.Source, ref.Name = s.kind, s.name
	}
	if err := ref.checkSource(field); err != nil {
		return ConfigRef{}, err
	}
	if ref.Source == SourceFile {
		ref.Name = resolvePath(ref.Name, base)
	}
	return ref, nil
}

// checkSource checks the reference's source and name.
func (r *ConfigRef) checkSource(field func(string) string) error {
	switch r.Source {
	case "":
		return sortie.Invalidf(field("var"), "the reference sets no source (one of %s)", strings.Join(sourceKinds, ", "))
	case SourceEnv:
		if !envKeyPattern.MatchString(r.Name) {
			return sortie.Invalidf(field(SourceEnv), "%q must be an environment variable name", r.Name)
		}
	case SourceGCPSecret:
		if !gcpSecretPattern.MatchString(r.Name) {
			return sortie.Invalidf(field(SourceGCPSecret), "%q must be projects/P/secrets/S or projects/P/secrets/S/versions/V", r.Name)
		}
	}
	for _, a := range r.Agents {
		if !runtimeIDPattern.MatchString(a) {
			return sortie.Invalidf(field("agents"), "%q is not an agent name", a)
		}
	}
	return nil
}

// CheckConfigRefs implements [sortie.ConfigRefChecker]: every ID must be
// in the allowlist and allowed for agent, and no two may set one
// variable. A nil allowlist refuses every ID.
func (c *ConfigRefs) CheckConfigRefs(agent string, refs []string) error {
	if c == nil {
		c = &ConfigRefs{}
	}
	vars := map[string]string{}
	for _, id := range refs {
		ref, ok := c.Refs[id]
		switch {
		case !ok:
			return sortie.Invalidf("config_refs", "%q is not a configuration reference of this host (one of %s)", id, c.ids())
		case len(ref.Agents) > 0 && !slices.Contains(ref.Agents, agent):
			return sortie.Invalidf("config_refs", "%q is not available to agent %s", id, agent)
		}
		if prev, dup := vars[ref.Var]; dup {
			return sortie.Invalidf("config_refs", "%q and %q both set %s", prev, id, ref.Var)
		}
		vars[ref.Var] = id
	}
	return nil
}

// ids lists the allowlist's IDs, sorted.
func (c *ConfigRefs) ids() string {
	ids := make([]string, 0, len(c.Refs))
	for id := range c.Refs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// Names returns the sorted, distinct names the allowlist's references of
// source read: for [SourceAWSSecret] the secrets a worker must be allowed
// to read, for [SourceEnv] the variables its environment must hold.
func (c *ConfigRefs) Names(source string) []string {
	var out []string
	for _, r := range c.Refs {
		if r.Source == source && !slices.Contains(out, r.Name) {
			out = append(out, r.Name)
		}
	}
	slices.Sort(out)
	return out
}
