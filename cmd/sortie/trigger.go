package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
prints the runs started, or why no rule matched. Exit status: 0 routed (runs
started or nothing matched), 1 a run could not be started, 2 an invalid event or
rules file.`,
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
			return g.withHost(func(h *host) error {
				router := triggers.NewRouter(rules, h.client, &triggers.Options{Logger: h.log})
				rep, err := ev.route(cmd.Context(), router)
				if perr := printReport(os.Stdout, g.jsonOut, rep); perr != nil {
					return perr
				}
				if err != nil && rep != nil {
					// The files were valid: some run could not be started.
					return &exitError{code: 1, err: err}
				}
				return err
			})
		},
	}
	f := c.Flags()
	f.StringVar(&eventFile, "event", "", "the event file (JSON; - for stdin)")
	f.StringVar(&rulesFile, "rules", os.Getenv("SORTIE_TRIGGER_RULES"), "the routing rules file (env SORTIE_TRIGGER_RULES)")
	return c
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

// printReport prints what routing did: one line per outcome and per
// malformed record, or the report as one JSON object.
func printReport(w io.Writer, jsonOut bool, rep *triggers.Report) error {
	if rep == nil {
		return nil
	}
	if jsonOut {
		return printJSON(w, rep)
	}
	for _, o := range rep.Outcomes {
		switch {
		case o.Unmatched != "":
			fmt.Fprintf(w, "%s event %s: no rule matched, nothing started: %s\n", o.Kind, o.EventID, o.Unmatched)
		case o.Error != "":
			fmt.Fprintf(w, "%s event %s: rule %s: not started: %s\n", o.Kind, o.EventID, o.Rule, o.Error)
		case o.Duplicate:
			fmt.Fprintf(w, "%s event %s: rule %s: already started (key %s)\n", o.Kind, o.EventID, o.Rule, o.IdempotencyKey)
		default:
			fmt.Fprintf(w, "run %s started (rule %s, agent %s, key %s)\n", o.RunID, o.Rule, o.Agent, o.IdempotencyKey)
		}
	}
	for _, m := range rep.Malformed {
		fmt.Fprintf(w, "%s record refused: %s\n", rep.Kind, m)
	}
	return nil
}
