package main

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// clientFlags are the global flags a client of --host takes. Every other
// global flag (--state-dir, --workers, --in-process, --payload-bucket,
// --allow-destination, ...) is a setting of the host this process would
// run: a client of --host refuses it given as a flag and ignores it in
// the environment, as it does the --dynamodb-table ones.
var clientFlags = []string{"host", "token-file", "json", "log-level", "help", "version"}

// checkHostOnly refuses a flag given to a command that has no use for
// it: --retention but to serve and reconcile, a host setting (a global
// flag not in clientFlags) with --host.
func (g *globals) checkHostOnly() error {
	if g.command == nil {
		return nil
	}
	if g.changed("retention") && !g.usesRetention() {
		return usagef("--retention: only the reconciler of %s deletes runs by age; sortie %s does not take it (it ignores SORTIE_RETENTION)",
			strings.Join(retentionCommands, " and "), g.command.Name())
	}
	if g.hostURL == "" {
		return nil
	}
	var given []string
	g.command.Root().PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if g.changed(f.Name) && !slices.Contains(clientFlags, f.Name) {
			given = append(given, "--"+f.Name)
		}
	})
	switch len(given) {
	case 0:
		return nil
	case 1:
		return usagef("%s is a setting of the host (sortie serve), and --host talks to one: set it there, or leave --host out", given[0])
	}
	return usagef("%s are settings of the host (sortie serve), and --host talks to one: set them there, or leave --host out", strings.Join(given, ", "))
}

// changed reports whether the command was given flag name.
func (g *globals) changed(name string) bool {
	f := g.command.Flags().Lookup(name)
	return f != nil && f.Changed
}

// clearHostOnlyEnv drops the payload store's settings read from the
// environment when the command talks to --host (the host's other
// settings are not read by a client).
func (g *globals) clearHostOnlyEnv() {
	for name, clear := range map[string]func(){
		"payload-bucket":        func() { g.payloadBucket = "" },
		"max-payload-bytes":     func() { g.payloadLimits.MaxPayloadBytes = 0 },
		"max-run-payload-bytes": func() { g.payloadLimits.MaxRunBytes = 0 },
	} {
		if !g.changed(name) {
			clear()
		}
	}
}
