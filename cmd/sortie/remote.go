package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/httpengine"
	"github.com/spf13/cobra"
)

// openRemote is the host at --host: commands run against its API exactly
// as on the embedded engine; the host reconciles and launches.
func (g *globals) openRemote(log *slog.Logger) (*target, error) {
	token, err := g.token()
	if err != nil {
		return nil, err
	}
	// The logger (stderr, --log-level) says when a follow loses the host
	// and when it is back.
	e, err := httpengine.New(g.hostURL, &httpengine.Options{Token: token, Logger: log})
	if err != nil {
		return nil, usagef("--host: %v", err)
	}
	return &target{remote: e, engine: e, client: sortie.NewClient(e, nil), log: log}, nil
}

// checkHost refuses an empty --host or SORTIE_HOST (a script's unset
// variable), which would otherwise run the command on an embedded engine
// in the working directory instead of the host.
//
// Settings from the environment yield to explicit flags: serve ignores
// SORTIE_HOST (a client setting), and a --host command ignores the
// SORTIE_DYNAMODB_* / SORTIE_WORKER_FUNCTION / SORTIE_KMS_* and payload
// store variables (host settings) unless their flags are given, which
// validate then refuses.
func (g *globals) checkHost(cmd *cobra.Command) error {
	if g.changed("host") && strings.TrimSpace(g.hostURL) == "" {
		return usagef("--host is empty: name the host (http(s)://HOST:PORT) or leave the flag out for the embedded engine")
	}
	if cmd.Name() == "serve" && !g.changed("host") {
		g.hostURL = ""
		return nil
	}
	if local := hostless(cmd); local != "" {
		if g.changed("host") {
			return usagef("--host: %s, not a host's API: leave --host out", local)
		}
		if cmd.Name() != "worker" {
			g.aws = awsFlags{} // the dynamo commands take their own --table and --endpoint
		}
		g.hostURL = "" // SORTIE_HOST, a client setting, does not apply
		return nil
	}
	if v, ok := os.LookupEnv("SORTIE_HOST"); ok && strings.TrimSpace(v) == "" && g.hostURL == "" {
		return usagef("SORTIE_HOST is set but empty: set it to the host's URL, or unset it for the embedded engine")
	}
	if g.hostURL != "" {
		for name, v := range map[string]*string{"dynamodb-table": &g.aws.table, "dynamodb-endpoint": &g.aws.dynamoEndpoint,
			"lambda-function": &g.aws.function, "lambda-endpoint": &g.aws.lambdaEndpoint,
			"kms-keys": &g.aws.kmsKeys, "kms-endpoint": &g.aws.kmsEndpoint} {
			if !g.changed(name) {
				*v = ""
			}
		}
		g.clearHostOnlyEnv()
	}
	return nil
}

// hostless says what cmd works on when that is not a host's API (the
// DynamoDB table of the dynamo commands, the invocation a worker runs),
// else "".
func hostless(cmd *cobra.Command) string {
	switch {
	case cmd.HasParent() && cmd.Parent().Name() == "dynamo":
		return "sortie dynamo works on the DynamoDB table"
	case cmd.Name() == "worker":
		return "sortie worker runs the invocation it is given"
	}
	return ""
}

// hostArgs is the part of a command line printed as a hint that reaches
// the same runs: --host (and --token-file), the DynamoDB table, or the
// embedded engine's --state-dir unless it is the default.
func (g *globals) hostArgs() string {
	if g.aws.table != "" {
		args := " --dynamodb-table " + shellQuote(g.aws.table)
		if g.aws.dynamoEndpoint != "" {
			args += " --dynamodb-endpoint " + shellQuote(g.aws.dynamoEndpoint)
		}
		return args
	}
	if g.hostURL == "" {
		if g.stateDir == defaultStateDir {
			return ""
		}
		return " --state-dir " + shellQuote(g.stateDir)
	}
	args := " --host " + shellQuote(g.hostURL)
	if g.tokenFile != "" {
		args += " --token-file " + shellQuote(g.tokenFile)
	}
	return args
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:=@%+,
func shellQuote(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=@%+,", c)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// token is the API token: --token-file, else SORTIE_TOKEN, else none. A
// token file that is empty, holds more than one line, or a token with a
// character an HTTP header cannot carry is a usage error naming the file
// or variable; the token is never echoed.
func (g *globals) token() (string, error) {
	if g.tokenFile == "" {
		t := os.Getenv("SORTIE_TOKEN")
		if problem := tokenProblem(t); t != "" && problem != "" {
			return "", usagef("SORTIE_TOKEN: the token %s", problem)
		}
		return t, nil
	}
	b, err := readLimited(g.tokenFile, 4096)
	if err != nil {
		return "", usagef("--token-file: %v", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", usagef("--token-file %s: the file is empty; it must hold the API token on one line", shellQuote(g.tokenFile))
	}
	if problem := tokenProblem(t); problem != "" {
		return "", usagef("--token-file %s: the token %s", shellQuote(g.tokenFile), problem)
	}
	return t, nil
}

// tokenProblem says what makes t unfit for an Authorization header ("" if
// nothing): more than one line, or a control character.
func tokenProblem(t string) string {
	if strings.ContainsAny(t, "\r\n") {
		return "spans more than one line; it must be one line"
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return fmt.Sprintf("holds a character not allowed in an HTTP header (byte %d, 0x%02x)", i+1, c)
		}
	}
	return ""
}
