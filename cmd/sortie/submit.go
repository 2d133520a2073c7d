package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/strictjson"
	"github.com/spf13/cobra"
)

// submitFlags are the flags of run and submit.
type submitFlags struct {
	vars        []string
	varsJSON    string
	varsFile    string
	configFile  string
	configRefs  []string
	contextID   string
	labels      []string
	key         string
	maxAttempts int
	maxCost     string
	policy      string
}

func (s *submitFlags) register(c *cobra.Command) {
	f := c.Flags()
	f.StringArrayVar(&s.vars, "var", nil, "a variable NAME=VALUE (VALUE is JSON if it parses, else a string); repeatable")
	f.StringVar(&s.varsJSON, "vars", "", "all variables as one JSON object")
	f.StringVar(&s.varsFile, "vars-file", "", "read the variables object from this JSON file (- for stdin)")
	f.StringVar(&s.configFile, "config-file", "", "inline configuration (secrets) from this JSON file of string values; sealed before it is stored; needs --config-env")
	f.StringArrayVar(&s.configRefs, "config-ref", nil, "a configuration reference NAME of the host's allowlist (--config-refs): the worker resolves its value when each attempt runs; repeatable")
	f.StringVar(&s.contextID, "context", "", "context ID grouping related runs")
	f.StringArrayVar(&s.labels, "label", nil, "a label KEY=VALUE; repeatable")
	f.StringVar(&s.key, "idempotency-key", "", "submitting again with the same key returns the same run")
	f.IntVar(&s.maxAttempts, "max-attempts", 0, "most attempts (default: the agent's, else 3)")
	f.StringVar(&s.maxCost, "max-cost", "", "the run's budget in dollars (0.05): no attempt starts past it and a running one stops before it would pass it; the run then fails with budget_exceeded")
	f.StringVar(&s.policy, "policy", "", `policy overrides as JSON, e.g. {"heartbeat_ms":1000,"lease_ms":3000}`)
}

func (s *submitFlags) request(agent string) (*sortie.SubmitRequest, error) {
	vars := map[string]json.RawMessage{}
	if s.varsJSON != "" {
		if err := strictjson.Unmarshal([]byte(s.varsJSON), &vars); err != nil {
			return nil, usagef("--vars: %s", notAnObject(err))
		} else if vars == nil {
			return nil, usagef("--vars: must be a JSON object, got %.40q", s.varsJSON)
		}
	}
	if s.varsFile != "" {
		if err := readVarsFile(s.varsFile, vars); err != nil {
			return nil, err
		}
	}
	named := map[string]bool{}
	for _, kv := range s.vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--var %.80q: want NAME=VALUE", kv)
		}
		if !utf8.ValidString(kv) { // json.Marshal would turn the bytes into U+FFFD
			return nil, usagef("--var %.80q: not valid UTF-8", kv)
		}
		if named[k] {
			return nil, usagef("--var %.80q: variable %.80q is given twice", kv, k)
		}
		named[k] = true
		if json.Valid([]byte(v)) {
			if err := checkJSONArg("--var "+k, []byte(v)); err != nil {
				return nil, err
			}
			vars[k] = json.RawMessage(v)
		} else {
			b, _ := json.Marshal(v)
			vars[k] = b
		}
	}
	labels, err := parseLabels(s.labels)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(vars)
	if err != nil {
		return nil, usagef("variables: %v", err)
	}
	policy, err := s.parsePolicy()
	if err != nil {
		return nil, err
	}
	req := &sortie.SubmitRequest{Agent: agent, Variables: b, ContextID: s.contextID, Labels: labels,
		IdempotencyKey: s.key, Policy: policy, ConfigRefs: s.configRefs}
	if s.configFile != "" {
		cfg, err := readLimited(s.configFile, sortie.MaxConfigBytes)
		if err != nil {
			return nil, usagef("--config-file: invalid config: %v", err)
		}
		if err := checkJSONArg("--config-file", cfg); err != nil {
			return nil, err
		}
		req.Config = cfg
	}
	return req, nil
}

// checkConfig refuses, before anything is stored, a --config-file the
// embedded host cannot take: inline configuration off (no --config-env), or
// a variable outside the allowlist.
func (g *globals) checkConfig(req *sortie.SubmitRequest) error {
	if len(req.Config) == 0 {
		return nil
	}
	if len(g.configEnv) == 0 {
		return usagef("--config-file needs --config-env NAMES (or SORTIE_CONFIG_ENV): inline configuration is off")
	}
	cfg, err := sortie.ParseConfig(req.Config)
	if err != nil {
		return usagef("--config-file: %v", err)
	}
	for name := range cfg {
		if !slices.Contains(g.configEnv, name) {
			return usagef("--config-file: variable %s is not in --config-env %s", name, strings.Join(g.configEnv, ","))
		}
	}
	return nil
}

// submit resolves the agent argument, opens the host and submits.
func submit(ctx context.Context, g *globals, s *submitFlags, arg string) (*target, *sortie.Run, error) {
	name, extra, err := resolveAgent(arg)
	if err != nil {
		return nil, nil, err
	}
	if g.hostURL != "" {
		// The host resolves the agent by name with its own catalog,
		// runtimes allowlist and configuration policy.
		extra = nil
	}
	req, err := s.request(name)
	if err != nil {
		return nil, nil, err
	}
	if err := g.checkConfig(req); err != nil && g.hostURL == "" {
		return nil, nil, err
	}
	t, err := g.openHost(extra...)
	if err != nil {
		return nil, nil, err
	}
	run, err := t.client.Submit(ctx, req)
	if err != nil {
		t.Close()
		return nil, nil, err
	}
	return t, run, nil
}

func newSubmitCmd(g *globals) *cobra.Command {
	s := &submitFlags{}
	c := &cobra.Command{
		Use:   "submit AGENT",
		Short: "Submit a run and print its ID without waiting",
		Long:  "AGENT is a directory holding agent.json (for example examples/textstats) or the name of a built-in agent.",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, run, err := submit(cmd.Context(), g, s, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			if g.jsonOut {
				return printJSON(os.Stdout, run)
			}
			fmt.Println(run.ID)
			return nil
		},
	}
	s.register(c)
	return c
}

func newRunCmd(g *globals) *cobra.Command {
	s := &submitFlags{}
	c := &cobra.Command{
		Use:   "run AGENT",
		Short: "Submit a run, follow it live and print its result",
		Long: `AGENT is a directory holding agent.json (for example examples/textstats) or the
name of a built-in agent. Exit status: 0 completed, 1 failed or rejected, 2 usage or
input error, 3 cancelled, 4 interrupted (input-required or auth-required), 130
when you stop following with Ctrl-C (the run goes on).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, run, err := submit(cmd.Context(), g, s, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			if !g.jsonOut {
				fmt.Fprintf(os.Stderr, "run %s submitted (agent %s)\n", run.ID, run.Agent.Name)
				if run.Queue != nil {
					fmt.Fprintf(os.Stderr, "queued: position %d for concurrency key %q; it starts when a slot frees\n", run.Queue.Position, run.Queue.Key)
				}
			}
			return follow(cmd.Context(), g, t, run.ID, sortie.Cursor{})
		},
	}
	s.register(c)
	return c
}

// exactArgs is cobra.ExactArgs with a usage error (exit status 2).
// parsePolicy reads --policy, --max-attempts and --max-cost. A field of
// --policy given as 0 is refused (a zero field means "the default", so
// writing it says something it does not do), and so is a flag that
// disagrees with the same field of --policy.
func (s *submitFlags) parsePolicy() (sortie.Policy, error) {
	var policy sortie.Policy
	if s.policy != "" {
		var fields map[string]json.RawMessage
		if err := strictjson.Unmarshal([]byte(s.policy), &policy); err != nil {
			return policy, usagef("--policy: %s", fieldError(err))
		}
		_ = json.Unmarshal([]byte(s.policy), &fields) // an object: strictjson took it
		for _, name := range slices.Sorted(maps.Keys(fields)) {
			if string(fields[name]) == "0" {
				return policy, usagef("--policy: %s is 0, which means the default; leave it out, or give a positive value", name)
			}
		}
	}
	if s.maxAttempts != 0 {
		if policy.MaxAttempts != 0 && policy.MaxAttempts != s.maxAttempts {
			return policy, usagef("--max-attempts %d and --policy max_attempts %d disagree; give one", s.maxAttempts, policy.MaxAttempts)
		}
		policy.MaxAttempts = s.maxAttempts
	}
	if s.maxCost != "" {
		n, err := sortie.ParseUSD(s.maxCost)
		var ve *sortie.ValidationError
		switch {
		case errors.As(err, &ve):
			return policy, usagef("--max-cost: %s; want dollars such as 0.05", ve.Reason)
		case err != nil || n == 0:
			return policy, usagef("--max-cost %q: want a positive amount of dollars such as 0.05 (at least 0.000000001)", s.maxCost)
		}
		if policy.MaxCostNanoUSD != 0 && policy.MaxCostNanoUSD != int64(n) {
			return policy, usagef("--max-cost %s and --policy max_cost_nano_usd %d disagree; give one", s.maxCost, policy.MaxCostNanoUSD)
		}
		policy.MaxCostNanoUSD = int64(n)
	}
	return policy, nil
}

func exactArgs(n int) cobra.PositionalArgs { return usageArgs(cobra.ExactArgs(n)) }

// rangeArgs is cobra.RangeArgs as a usage error (exit 2).
func rangeArgs(lo, hi int) cobra.PositionalArgs { return usageArgs(cobra.RangeArgs(lo, hi)) }

func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &usageErr{err}
		}
		return nil
	}
}

// parseLabels turns --label KEY=VALUE arguments into labels; one without
// "=" or a key given twice is a usage error (as --var given twice).
func parseLabels(args []string) (map[string]string, error) {
	labels := map[string]string{}
	for _, kv := range args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usagef("--label %.80q: want KEY=VALUE", kv)
		}
		if _, dup := labels[k]; dup {
			return nil, usagef("--label %.80q: label %.80q is given twice", kv, k)
		}
		labels[k] = v
	}
	return labels, nil
}

// maxVarsFileBytes bounds what --vars-file reads; the engine refuses
// variables over its own limit (sortie.MaxVariablesBytes, or its payload
// store's per-payload maximum), naming it.
const maxVarsFileBytes = 1 << 30

// notAnObject says why decoding a JSON object failed: the kind of value
// found, or the decoder's error (with its position).
func notAnObject(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field == "" {
		return "must be a JSON object, got " + te.Value
	}
	if errors.Is(err, strictjson.ErrDuplicateKey) {
		return err.Error()
	}
	return "not a JSON object: " + err.Error()
}

// fieldError says what is wrong with a JSON field without Go's type
// names: "heartbeat_ms: got string, want an integer" for a mistyped field,
// the decoder's error otherwise.
func fieldError(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	if te.Field == "" {
		return notAnObject(err)
	}
	want := te.Type.Kind().String()
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		want = "an integer"
	case reflect.String:
		want = "a string"
	}
	return fmt.Sprintf("%s: got %s, want %s", te.Field, te.Value, want)
}

// readVarsFile merges the JSON object in the operator's file (or stdin) into
// vars.
func readVarsFile(path string, vars map[string]json.RawMessage) error {
	b, err := readLimited(path, maxVarsFileBytes)
	if err != nil {
		return usagef("--vars-file: invalid variables: %v", err)
	}
	var obj map[string]json.RawMessage
	if err := strictjson.Unmarshal(b, &obj); err != nil {
		return usagef("--vars-file: %s: %s", path, notAnObject(err))
	} else if obj == nil {
		return usagef("--vars-file: %s must hold a JSON object", path)
	}
	for k, v := range obj {
		vars[k] = v
	}
	return nil
}

// checkJSONArg refuses JSON b given by flag when it is not valid or
// holds an object key twice (which readers take differently).
func checkJSONArg(flag string, b []byte) error {
	if !json.Valid(b) {
		return usagef("%.100s: not valid JSON", flag)
	}
	if _, err := strictjson.Scan(b); err != nil {
		return usagef("%.100s: %v", flag, err)
	}
	return nil
}

// readLimited reads the operator's file (or stdin for "-"), refusing more
// than limit bytes with an error naming the limit.
func readLimited(path string, limit int) ([]byte, error) {
	f := os.Stdin
	if path != "-" {
		var err error
		if f, err = os.Open(path); err != nil {
			return nil, err
		}
		defer f.Close()
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("more than %d bytes (the limit)", limit)
	}
	return b, nil
}
