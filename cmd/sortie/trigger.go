package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/cehttp"
	"github.com/spf13/cobra"
)

// maxEventFileBytes bounds an event file: 6 MiB, Lambda's synchronous
// payload limit.
const maxEventFileBytes = 6 << 20

func newTriggerCmd(g *globals) *cobra.Command {
	var eventFile, rulesFile string
	c := &cobra.Command{
		Use:   "trigger --event FILE [--rules FILE]",
		Short: "Replay a cloud event file through the trigger routing rules",
		Long: `trigger reads an event as a Lambda function or Cloud Run service receives it — an
EventBridge event, an S3, SQS or SNS notification, or a CloudEvent in the JSON
(structured) format — routes it through the rules file (see examples/triggers) and
starts the runs its rules name on the embedded defaults, with the same idempotency
keys the cloud handlers use: replaying an event again starts no second run. It
prints one line per event and rule (with --json one JSON object): started RUN,
existed RUN (an earlier delivery started it), unmatched (each rule's reason),
rejected (why: undecodable data, a template reading a missing field), ignored
(s3:TestEvent) or failed (why). Exit status: 0 routed (nothing failed or was
rejected), 1 a run could not be started (replaying retries it), 2 an invalid or
rejected event, or an invalid rules file.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			rules, err := loadTriggerRules(rulesFile)
			if err != nil {
				return err
			}
			ev, err := readTriggerEvent(eventFile)
			if err != nil {
				return err
			}
			return g.withHost(func(t *target) error {
				// The report is the output: the router's own log lines would
				// say each outcome a second time.
				router := triggers.NewRouter(rules, t.engine, &triggers.Options{Logger: slog.New(slog.DiscardHandler)})
				rep, err := ev.route(cmd.Context(), router)
				if rep == nil {
					return err
				}
				if perr := printReport(os.Stdout, g.jsonOut, rep); perr != nil {
					return perr
				}
				return reportStatus(rep, err)
			})
		},
	}
	f := c.Flags()
	f.StringVar(&eventFile, "event", "", "the event file (JSON; - for stdin)")
	f.StringVar(&rulesFile, "rules", os.Getenv("SORTIE_TRIGGER_RULES"), "the routing rules file (env SORTIE_TRIGGER_RULES)")
	return c
}

// reportStatus is the exit status of a routed event, with a summary that
// points at the report rather than repeating its reasons: 1 when a run
// failed to start, 2 when something was rejected, else 0.
func reportStatus(rep *triggers.Report, err error) error {
	if n := rep.Count(triggers.Failed); n > 0 || err != nil {
		return &exitError{code: 1, err: fmt.Errorf("trigger: %d run(s) not started (see \"failed\" above); replaying the event retries them", n)}
	}
	if n := rep.Count(triggers.Rejected); n > 0 {
		return &exitError{code: 2, err: fmt.Errorf("trigger: %d rejected (see \"rejected\" above); a replay cannot change that", n)}
	}
	return nil
}

func loadTriggerRules(path string) (*triggers.Rules, error) {
	if path == "" {
		return nil, usagef("--rules: pass a rules file (or set SORTIE_TRIGGER_RULES); see examples/triggers/rules.json")
	}
	rules, err := triggers.LoadRules(path)
	if err != nil {
		return nil, usagef("--rules %s: %v", path, err)
	}
	return rules, nil
}

// triggerEvent is an event file read and checked before the host opens.
type triggerEvent struct {
	raw json.RawMessage
	ce  *triggers.CloudEvent
}

func readTriggerEvent(path string) (*triggerEvent, error) {
	if path == "" {
		return nil, usagef("--event: pass the event file")
	}
	raw, err := readLimited(path, maxEventFileBytes)
	if err != nil {
		return nil, usagef("--event: %v", err)
	}
	kind, err := triggers.DetectKind(raw)
	if err != nil {
		return nil, usagef("--event %s: %v", path, err)
	}
	if kind == triggers.KindCloudEvents {
		ce, err := cehttp.ParseJSON(raw)
		if err != nil {
			return nil, usagef("--event %s: %v", path, err)
		}
		return &triggerEvent{ce: &ce}, nil
	}
	if _, _, err := triggers.ParseAWS(raw); err != nil {
		return nil, usagef("--event %s: %v", path, err)
	}
	return &triggerEvent{raw: raw}, nil
}

func (e *triggerEvent) route(ctx context.Context, r *triggers.Router) (*triggers.Report, error) {
	if e.ce == nil {
		return r.Replay(ctx, e.raw)
	}
	out, err := r.RouteCloudEvent(ctx, *e.ce)
	return &triggers.Report{Kind: triggers.KindCloudEvents, Outcomes: out}, err
}

// printReport prints what routing did: one line per outcome, or the
// report as one JSON object.
func printReport(w io.Writer, jsonOut bool, rep *triggers.Report) error {
	if jsonOut {
		return printJSON(w, rep)
	}
	for _, o := range rep.Outcomes {
		fmt.Fprintln(w, outcomeLine(o))
	}
	return nil
}

// outcomeLine is one outcome as a line starting with its result.
func outcomeLine(o triggers.Outcome) string {
	event := fmt.Sprintf("%s event %s", o.Kind, o.EventID)
	if o.EventID == "" {
		event = fmt.Sprintf("%s event", o.Kind)
	}
	rule := ""
	if o.Rule != "" {
		rule = fmt.Sprintf(" (rule %s, agent %s)", o.Rule, o.Agent)
	}
	switch o.Result {
	case triggers.Started:
		return fmt.Sprintf("started run %s%s for %s", o.RunID, rule, event)
	case triggers.Existed:
		if o.RunID == "" {
			return fmt.Sprintf("existed%s for %s: %s", rule, event, o.Reason)
		}
		return fmt.Sprintf("existed run %s%s for %s: started by an earlier delivery, nothing new started", o.RunID, rule, event)
	case triggers.Unmatched:
		return fmt.Sprintf("unmatched %s: no rule matched, nothing started: %s", event, o.Reason)
	}
	return fmt.Sprintf("%s %s%s: %s", o.Result, event, rule, o.Reason)
}
