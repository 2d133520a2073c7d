package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/server/httpengine"
)

func newAgentsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "agents",
		Short: "List the agents runs may name: name, runtime, description",
		Long: `agents lists the agents runs may name: the built-in ones (and, with --host, the
agents of that host, its --agent directories included). --json prints each agent's
manifest (its policy with the host's defaults, its input_schema) one a line; sortie
describe AGENT shows one with what its variables do.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := g.agentDirectory()
			if err != nil {
				return err
			}
			agents, err := dir.ListAgents(cmd.Context())
			if err != nil {
				return err
			}
			if g.jsonOut {
				for _, m := range agents {
					if err := printJSON(os.Stdout, m); err != nil {
						return err
					}
				}
				return nil
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tRUNTIME\tDESCRIPTION")
			for _, m := range agents {
				fmt.Fprintf(w, "%s\t%s\t%s\n", m.Name, m.Runtime, m.Description)
			}
			return w.Flush()
		},
	}
}

func newDescribeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "describe AGENT",
		Short: "Show an agent: its manifest, policy defaults and what its variables do",
		Long: `describe shows an agent (a built-in name, a directory holding agent.json, or with
--host the name of one of the host's agents): version, runtime, description, the
policy a run gets without overrides, and the variables its input_schema declares —
type, limits, default and description of each. --json prints the manifest.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, extra, err := resolveAgent(args[0])
			if err != nil {
				return err
			}
			dir, err := g.agentDirectory(extra...)
			if err != nil {
				return err
			}
			m, err := dir.DescribeAgent(cmd.Context(), name)
			if err != nil {
				return err
			}
			if g.jsonOut {
				return printJSON(os.Stdout, m)
			}
			return printAgent(os.Stdout, m)
		},
	}
}

// agentDirectory is what agents and describe read: the host's API with
// --host, else the catalog the embedded (or AWS) host would run, extra
// agents added to the built-ins, read without opening any state.
func (g *globals) agentDirectory(extra ...sortie.Manifest) (sortie.AgentDirectory, error) {
	if g.hostURL != "" {
		token, err := g.token()
		if err != nil {
			return nil, err
		}
		e, err := httpengine.New(g.hostURL, &httpengine.Options{Token: token})
		if err != nil {
			return nil, usagef("--host: %v", err)
		}
		return e, nil
	}
	cfg, err := g.config(extra...)
	if err != nil {
		return nil, err
	}
	if cfg.Agents == nil {
		cfg.Agents = builtin.Agents()
	}
	return sortie.NewAgentDirectory(cfg.Agents, sortie.Policy{}), nil
}

// printAgent writes m as describe shows it.
func printAgent(out io.Writer, m *sortie.Manifest) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "agent\t%s %s\nruntime\t%s\n", m.Name, m.Version, m.Runtime)
	if m.Description != "" {
		fmt.Fprintf(w, "description\t%s\n", m.Description)
	}
	for _, f := range []struct {
		name string
		v    any
		set  bool
	}{
		{"policy", m.Policy, true}, {"concurrency", m.Concurrency, m.Concurrency != nil},
		{"models", m.Models, len(m.Models) > 0}, {"budget", m.Budget, m.Budget != nil},
	} {
		if f.set {
			b, err := json.Marshal(f.v)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\t%s\n", f.name, b)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return printVariables(out, m.InputSchema)
}
