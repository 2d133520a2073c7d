package functions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sortie-run/sortie"
)

// SecretSource reads secrets of a secret store for configuration
// references ([ConfigRefs.Secrets]); functions/awssecrets and
// functions/gcpsecrets are the AWS and Google Cloud ones.
type SecretSource interface {
	// Secret returns the current value of secret name, as the allowlist
	// names it (an ARN, a resource name). Errors wrap sortie.ErrNotFound
	// when there is no such secret or version, and sortie.ErrUnavailable
	// when a retry may succeed; their text names neither the value nor
	// the secret, only the store's error code (see [SecretError]).
	Secret(ctx context.Context, name string) ([]byte, error)
}

// SecretError is the error a [SecretSource] returns: the store's error
// code ("ResourceNotFoundException", "PermissionDenied"), wrapping the
// sortie sentinel it stands for, if any. Its text is the code alone.
type SecretError struct {
	// Code is the store's error code.
	Code string
	// Err is sortie.ErrNotFound, sortie.ErrUnavailable or nil.
	Err error
}

func (e *SecretError) Error() string { return e.Code }

// Unwrap returns the sentinel.
func (e *SecretError) Unwrap() error { return e.Err }

// LazySecretSource returns a source that makes its underlying source with
// open on its first Secret call, so a worker host needs no store client
// (nor credentials) until an attempt names a reference of that store. A
// failed open makes every call fail with a [*SecretError] "NoClient".
func LazySecretSource(open func(ctx context.Context) (SecretSource, error)) SecretSource {
	return &lazySource{open: open}
}

type lazySource struct {
	open func(ctx context.Context) (SecretSource, error)
	once sync.Once
	src  SecretSource
	err  error
}

func (l *lazySource) Secret(ctx context.Context, name string) ([]byte, error) {
	l.once.Do(func() { l.src, l.err = l.open(context.WithoutCancel(ctx)) })
	if l.err != nil {
		return nil, &SecretError{Code: "NoClient"}
	}
	return l.src.Secret(ctx, name)
}

// gcpSecretPattern is a Secret Manager secret or secret version name.
var gcpSecretPattern = regexp.MustCompile(`^projects/[^/]+/secrets/[^/]+(/versions/[^/]+)?$`)

// maxRefValueBytes bounds the value of one configuration reference.
const maxRefValueBytes = 64 << 10

// resolveRefs reads the values of the attempt's configuration references,
// keyed by the variables they set. A refusal is returned as the attempt's
// outcome, naming the reference by ID only: rejected when the worker host
// has no allowlist or the allowlist refuses an ID, error type "config"
// when a value cannot be read (retryable when the source is unavailable).
func (w *Worker) resolveRefs(ctx context.Context, inv *sortie.Invocation) (map[string]string, *sortie.Outcome) {
	if len(inv.ConfigRefs) == 0 {
		return nil, nil
	}
	c := w.ConfigRefs
	if c == nil {
		o := errorOutcome(sortie.ErrorTypeRejected, "the invocation names configuration references; this worker host has none", false)
		return nil, &o
	}
	if err := c.CheckConfigRefs(inv.Agent.Name, inv.ConfigRefs); err != nil {
		o := errorOutcome(sortie.ErrorTypeRejected, err.Error(), false)
		return nil, &o
	}
	out := make(map[string]string, len(inv.ConfigRefs))
	for _, id := range inv.ConfigRefs {
		ref := c.Refs[id]
		v, err := c.value(ctx, ref)
		if err != nil {
			clear(out)
			o := errorOutcome(errTypeConfig, fmt.Sprintf("configuration reference %q (%s): %v", id, ref.Source, err),
				errors.Is(err, sortie.ErrUnavailable))
			return nil, &o
		}
		out[ref.Var] = v
	}
	return out, nil
}

// value reads ref's value. Its errors name neither the value nor where it
// comes from.
func (c *ConfigRefs) value(ctx context.Context, ref ConfigRef) (string, error) {
	var b []byte
	switch ref.Source {
	case SourceEnv:
		lookup := c.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		v, ok := lookup(ref.Name)
		if !ok {
			return "", errors.New("not set in the worker's environment")
		}
		b = []byte(v)
	case SourceFile:
		var err error
		if b, err = readRefFile(ref.Name); err != nil {
			return "", err
		}
	default:
		src := c.Secrets[ref.Source]
		if src == nil {
			return "", errors.New("this worker host has no such source")
		}
		var err error
		if b, err = src.Secret(ctx, ref.Name); err != nil {
			return "", secretFailure(err)
		}
	}
	defer clear(b)
	return refValue(b)
}

// readRefFile reads a host-pinned file, dropping one trailing newline.
func readRefFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("the host's file is missing: %w", sortie.ErrNotFound)
		}
		return nil, errors.New("the host's file cannot be opened")
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRefValueBytes+2))
	if err != nil {
		return nil, errors.New("the host's file cannot be read")
	}
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n > 1 && b[n-2] == '\r' {
			b = b[:n-2]
		}
	}
	return b, nil
}

// refValue checks a value: at least sortie.MinConfigValueBytes (shorter
// ones cannot be masked safely, the rule inline configuration follows
// when it is sealed) and at most maxRefValueBytes of UTF-8, no NUL.
func refValue(b []byte) (string, error) {
	switch {
	case len(b) < sortie.MinConfigValueBytes:
		return "", fmt.Errorf("the value is %d bytes, under %d: too short to mask safely where an agent echoes it", len(b), sortie.MinConfigValueBytes)
	case len(b) > maxRefValueBytes:
		return "", fmt.Errorf("the value is over %d bytes", maxRefValueBytes)
	case !utf8.Valid(b) || strings.ContainsRune(string(b), 0):
		return "", errors.New("the value is not UTF-8 text without NUL bytes")
	}
	return string(b), nil
}

// secretFailure describes a secret store's error by its class and code.
func secretFailure(err error) error {
	code := "error"
	var se *SecretError
	if errors.As(err, &se) && se.Code != "" {
		code = se.Code
	}
	switch {
	case errors.Is(err, sortie.ErrNotFound):
		return fmt.Errorf("not found in the secret store (%s): %w", code, sortie.ErrNotFound)
	case errors.Is(err, sortie.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the secret store is unavailable (%s): %w", code, sortie.ErrUnavailable)
	}
	return fmt.Errorf("the secret store refused (%s)", code)
}

// mergeRefs adds the references' variables to the inline configuration;
// a variable set by both is refused (rejected), naming the variable.
func mergeRefs(cfg, refs map[string]string) (map[string]string, *sortie.Outcome) {
	if len(refs) == 0 {
		return cfg, nil
	}
	if cfg == nil {
		return refs, nil
	}
	for k, v := range refs {
		if _, dup := cfg[k]; dup {
			clear(cfg)
			clear(refs)
			o := errorOutcome(sortie.ErrorTypeRejected, "both the inline configuration and a configuration reference set "+k, false)
			return nil, &o
		}
		cfg[k] = v
	}
	return cfg, nil
}
