package functions

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/sortie-run/sortie"
)

// Call is the handler's view of the attempt: its invocation, variables,
// resume data, events and logger. Its methods are safe for concurrent use.
type Call struct {
	inv *sortie.Invocation
	cfg map[string]string
	log *slog.Logger
	out *sender
}

// RunID returns the run's ID.
func (c *Call) RunID() sortie.RunID { return c.inv.RunID }

// Attempt returns the attempt number, from 1.
func (c *Call) Attempt() int { return c.inv.Attempt }

// Invocation returns a copy of the invocation.
func (c *Call) Invocation() *sortie.Invocation { return cloneInvocation(c.inv) }

// Variables decodes the run's variables (a JSON object; {} when absent)
// into v. A decode error is a [*sortie.ValidationError] for field
// "variables".
func (c *Call) Variables(v any) error {
	b := c.inv.Variables
	if len(bytes.TrimSpace(b)) == 0 {
		b = json.RawMessage("{}")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return sortie.Invalidf("variables", "%v", err)
	}
	return nil
}

// Emit reports an event of kind with text and data (marshalled to JSON;
// nil for none). Events are numbered 1, 2, ... in the attempt and reach the
// reporter in that order before Emit returns. An invalid event (see
// [sortie.Event.Validate]; kind 1-64 bytes, text at most
// [sortie.MaxEventTextBytes], data at most [sortie.MaxEventDataBytes]) is a
// [*sortie.ValidationError] and is not sent. After the attempt ended, Emit
// returns an error and sends nothing.
func (c *Call) Emit(kind, text string, data any) error {
	e := sortie.Event{Kind: kind, Text: text, TimeMs: time.Now().UnixMilli()}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			return sortie.Invalidf("event.data", "marshal: %v", err)
		}
		e.Data = b
	}
	if err := e.Validate(); err != nil {
		return err
	}
	return c.out.event(e)
}

// Resume returns the resume data (the interrupt's checkpoint and the
// client's input) of an attempt that continues an interrupted run, or nil.
func (c *Call) Resume() *sortie.Resume {
	if c.inv.Resume == nil {
		return nil
	}
	return &sortie.Resume{
		Checkpoint: bytes.Clone(c.inv.Resume.Checkpoint),
		Input:      bytes.Clone(c.inv.Resume.Input),
	}
}

// Config returns a copy of the attempt's opened inline configuration:
// the variables it sets, all named in the worker's environment allowlist
// ([InlineConfig.Allow]). It is nil when the run has none. The values may
// be secrets: never log, emit or return them.
func (c *Call) Config() map[string]string { return maps.Clone(c.cfg) }

// Logger returns the attempt's logger (the worker's, with run and attempt
// attributes). Logs go to stderr, never to stdout.
func (c *Call) Logger() *slog.Logger { return c.log }

func cloneInvocation(inv *sortie.Invocation) *sortie.Invocation {
	c := *inv
	c.Variables = bytes.Clone(inv.Variables)
	c.ConfigRefs = slices.Clone(inv.ConfigRefs)
	c.SealedConfig = bytes.Clone(inv.SealedConfig)
	if inv.Resume != nil {
		c.Resume = &sortie.Resume{
			Checkpoint: bytes.Clone(inv.Resume.Checkpoint),
			Input:      bytes.Clone(inv.Resume.Input),
		}
	}
	return &c
}
