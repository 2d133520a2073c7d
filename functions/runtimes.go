package functions

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/strictjson"
)

// RuntimesVersion is the format version of a host's exec runtimes file.
const RuntimesVersion = "sortie.runtimes/v1"

// maxRuntimesFileBytes is the largest runtimes file LoadExecRuntimes reads.
const maxRuntimesFileBytes = 1 << 20

// ExecSpec is a host-pinned command of an "exec:ID" runtime. It speaks the
// NDJSON worker protocol: the invocation as one JSON line on its stdin, then
// stdin closed; [sortie.Message] lines on its stdout; logs on its stderr.
type ExecSpec struct {
	// Command is the program and its arguments; Command[0] is an absolute
	// path or a name looked up in the worker's PATH.
	Command []string
	// Dir is the working directory. Optional; defaults to the worker's.
	Dir string
	// Env is the complete environment of the command, "KEY=VALUE" entries,
	// with the variables of the attempt's inline configuration added (see
	// [InlineConfig]); nothing of the worker's environment is inherited.
	Env []string
	// GraceMs is how long the command has to exit after SIGTERM before it
	// gets SIGKILL, in ms (with Protocol, to end a cancelled attempt).
	// Optional; defaults to 5000.
	GraceMs int64
	// Protocol is "" for a command started once per attempt, or
	// [SessionVersion] for one that stays up and takes one attempt after
	// another (run it with a [Pool], see [NewPools]). Optional.
	Protocol string
}

type runtimesFile struct {
	Version  string                 `json:"version"`
	Runtimes map[string]runtimeJSON `json:"runtimes"`
}

type runtimeJSON struct {
	Command []string          `json:"command"`
	Dir     string            `json:"dir,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	GraceMs int64             `json:"grace_ms,omitempty"`
	// Protocol is "sortie.invocation/v1" (the default: one process per
	// attempt) or SessionVersion.
	Protocol string `json:"protocol,omitempty"`
}

var (
	runtimeIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	envKeyPattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
)

// LoadExecRuntimes reads the host's allowlist of exec runtimes from the
// JSON file at path:
//
//	{"version": "sortie.runtimes/v1",
//	 "runtimes": {"ID": {"command": ["python3", "tool/worker.py"], "dir": "tool",
//	                     "env": {"KEY": "VALUE"}, "grace_ms": 5000,
//	                     "protocol": "sortie.session/v1"}}}
//
// protocol is optional: "sortie.invocation/v1" (the default) starts the
// command once per attempt; [SessionVersion] keeps it up for attempt after
// attempt.
//
// Relative paths resolve against the file's directory: dir (which defaults
// to that directory), Command[0] when it contains a "/", and arguments that
// start with "./" or "../" or contain a "/" and do not start with "-".
// Command[0] without a "/" is looked up in PATH now. IDs are 1-63
// characters of a-z, 0-9, '.', '_', '-'. Errors are
// [*sortie.ValidationError]s whose field names the runtime ID and field
// ("runtimes.ID.command").
func LoadExecRuntimes(path string) (map[string]ExecSpec, error) {
	b, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	var f runtimesFile
	if err := strictjson.Unmarshal(b, &f); err != nil {
		return nil, sortie.Invalidf("runtimes", "%s: %v", path, err)
	}
	if f.Version != RuntimesVersion {
		return nil, sortie.Invalidf("version", "%s: %q is not supported (want %q)", path, f.Version, RuntimesVersion)
	}
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("load exec runtimes %s: %w", path, err)
	}
	specs := make(map[string]ExecSpec, len(f.Runtimes))
	for id, rt := range f.Runtimes {
		spec, err := rt.spec(id, base)
		if err != nil {
			return nil, err
		}
		specs[id] = spec
	}
	return specs, nil
}

func readLimited(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load exec runtimes: %w", err)
	}
	defer fh.Close()
	b, err := readAtMost(fh, maxRuntimesFileBytes)
	if err != nil {
		return nil, fmt.Errorf("load exec runtimes %s: %w", path, err)
	}
	return b, nil
}

func (rt *runtimeJSON) spec(id, base string) (ExecSpec, error) {
	field := func(name string) string { return "runtimes." + id + "." + name }
	if !runtimeIDPattern.MatchString(id) {
		return ExecSpec{}, sortie.Invalidf("runtimes."+id, "ID %q must be 1-63 characters of a-z, 0-9, '.', '_' or '-'", id)
	}
	if len(rt.Command) == 0 || rt.Command[0] == "" {
		return ExecSpec{}, sortie.Invalidf(field("command"), "must name a program")
	}
	protocol, err := rt.protocol(field("protocol"))
	if err != nil {
		return ExecSpec{}, err
	}
	if rt.GraceMs < 0 || rt.GraceMs > 600_000 {
		return ExecSpec{}, sortie.Invalidf(field("grace_ms"), "%d outside 0..600000 ms", rt.GraceMs)
	}
	prog, err := resolveProgram(rt.Command[0], base)
	if err != nil {
		return ExecSpec{}, sortie.Invalidf(field("command"), "%v", err)
	}
	env, err := envList(rt.Env)
	if err != nil {
		return ExecSpec{}, sortie.Invalidf(field("env"), "%v", err)
	}
	cmd := []string{prog}
	for _, arg := range rt.Command[1:] {
		cmd = append(cmd, resolveArg(arg, base))
	}
	return ExecSpec{Command: cmd, Dir: resolvePath(rt.Dir, base), Env: env, GraceMs: rt.GraceMs, Protocol: protocol}, nil
}

// protocol maps the file's protocol to ExecSpec.Protocol.
func (rt *runtimeJSON) protocol(field string) (string, error) {
	switch rt.Protocol {
	case "", sortie.InvocationVersion:
		return "", nil
	case SessionVersion:
		return SessionVersion, nil
	}
	return "", sortie.Invalidf(field, "%q: want %q (one process per attempt, the default) or %q", rt.Protocol, sortie.InvocationVersion, SessionVersion)
}

func resolveProgram(prog, base string) (string, error) {
	if !strings.Contains(prog, "/") {
		p, err := exec.LookPath(prog)
		if err != nil {
			return "", fmt.Errorf("program %q not found in PATH", prog)
		}
		return p, nil
	}
	p := resolvePath(prog, base)
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		return "", fmt.Errorf("program %s is not a file", p)
	}
	return p, nil
}

// resolveArg resolves an argument that looks like a relative path.
func resolveArg(arg, base string) string {
	if strings.HasPrefix(arg, "-") || !strings.Contains(arg, "/") || filepath.IsAbs(arg) {
		return arg
	}
	return filepath.Join(base, arg)
}

func resolvePath(p, base string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

func envList(env map[string]string) ([]string, error) {
	out := []string{}
	for k, v := range env {
		if !envKeyPattern.MatchString(k) {
			return nil, fmt.Errorf("key %q must match %s", k, envKeyPattern)
		}
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("value of %s contains a NUL byte", k)
		}
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out, nil
}

// readAtMost reads r to its end, refusing more than limit bytes.
func readAtMost(r io.Reader, limit int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, sortie.Invalidf("runtimes", "file over %d bytes", limit)
	}
	return b, nil
}
