package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/host/telemetry"
	"github.com/sortie-run/sortie/server/httpengine"
)

// exitError carries a process exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usagef is a usage or input error: exit status 2.
func usagef(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	os.Exit(execute(stopOnClosedStdout(ctx), os.Args[1:]))
}

func execute(ctx context.Context, args []string) int {
	tracing, err := telemetry.StartTracing(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie:", err)
		return 2
	}
	defer tracing.Shutdown()
	root := newRoot()
	root.SetArgs(args)
	var readers []sdkmetric.Reader
	if c, _, err := root.Find(args); err == nil && c.Name() == "serve" {
		reader, handler, err := host.NewPrometheus()
		if err != nil {
			fmt.Fprintln(os.Stderr, "sortie:", err)
			return 2
		}
		readers, ctx = append(readers, reader), withMetricsHandler(ctx, handler)
	}
	metrics, err := host.StartMetrics(ctx, readers...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie:", err)
		return 2
	}
	defer metrics.Shutdown()
	err = root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			printError(ee.err)
		}
		return ee.code
	}
	printError(err)
	if errors.Is(err, httpengine.ErrUnauthenticated) {
		if tokenGiven() {
			fmt.Fprintln(os.Stderr, "sortie: the host refused the API token given (SORTIE_TOKEN or --token-file): it is not one of the tokens serve was given (SORTIE_API_TOKENS or --api-tokens-file)")
		} else {
			fmt.Fprintln(os.Stderr, "sortie: the host needs an API token: set SORTIE_TOKEN or --token-file to one of the tokens serve was given (SORTIE_API_TOKENS or --api-tokens-file)")
		}
		return 2
	}
	if isInputError(err) {
		return 2
	}
	return 1
}

// printError prints err on stderr after "sortie: ", each error of a joined
// one (as delete of several runs returns) on its own prefixed line.
func printError(err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			printError(e)
		}
		return
	}
	fmt.Fprintln(os.Stderr, "sortie:", err)
}

// isInputError reports errors that exit 2: bad input, an unknown run, a run
// in the wrong state for the command, a submission refused for its agent's
// spent budget, and cobra's own usage errors (a bad token exits 2 too).
func isInputError(err error) bool {
	for _, target := range []error{sortie.ErrInvalidArgument, sortie.ErrNotFound,
		sortie.ErrIdempotencyConflict, sortie.ErrConflict, sortie.ErrTerminal, sortie.ErrBudgetExhausted} {
		if errors.Is(err, target) {
			return true
		}
	}
	// cobra's flag-group errors ("if any flags in the group [input
	// input-file] are set none of the others can be") have no type.
	return isUsage(err) || strings.HasPrefix(err.Error(), "unknown command") || strings.Contains(err.Error(), "flags in the group [")
}

// isUsage reports cobra's own argument and flag errors.
func isUsage(err error) bool {
	var ue *usageErr
	return errors.As(err, &ue)
}

type usageErr struct{ error }

func (u *usageErr) Unwrap() error { return u.error }

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "sortie",
		Short:         "Run agents and functions as durable remote executions",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.checkHost(cmd); err != nil {
				return err
			}
			return g.validate()
		},
		Long: `sortie submits runs of agents, follows their events, and cancels, resumes and
inspects them. On the embedded defaults runs are kept in an SQLite control plane
under --state-dir and attempts run on warm "sortie worker --session" processes
(one "sortie worker" process per attempt for submit, trigger and reconcile --once).`,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageErr{err} })
	g.register(root)
	root.AddCommand(
		newRunCmd(g), newSubmitCmd(g), newFollowCmd(g), newGetCmd(g), newListCmd(g),
		newCancelCmd(g), newDeleteCmd(g), newResumeCmd(g), newCostCmd(g), newWorkerCmd(g), newReconcileCmd(g), newServeCmd(g), newPushCmd(g),
		newDynamoCmd(),
		newTriggerCmd(g), newAgentsCmd(g), newDescribeCmd(g),
	)
	return root
}

// version is the module version the binary was built from, or "devel".
// buildVersion is the version set at link time
// (-ldflags "-X main.buildVersion=v1.2.3"); it wins over the build info.
var buildVersion string

// version is buildVersion, else the module version (go install
// ...@version), else "devel" with the commit the binary was built from
// (when the build stamped it) and the Go version.
func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	out := "devel"
	if rev := vcs["vcs.revision"]; rev != "" {
		out += " " + rev[:min(12, len(rev))]
		if vcs["vcs.modified"] == "true" {
			out += "+modified"
		}
		if t := vcs["vcs.time"]; t != "" {
			out += " " + t
		}
	}
	return out + " (" + bi.GoVersion + ")"
}

// tokenGiven reports whether this command was given an API token:
// SORTIE_TOKEN or a --token-file flag.
func tokenGiven() bool {
	if os.Getenv("SORTIE_TOKEN") != "" {
		return true
	}
	return slices.ContainsFunc(os.Args[1:], func(a string) bool { return a == "--token-file" || strings.HasPrefix(a, "--token-file=") })
}
