package main

import "strings"

// hostOnlyFlags are the settings of the host this process runs: a
// client of --host refuses them given as flags and ignores them in the
// environment, as it does the --dynamodb-table ones.
var hostOnlyFlags = []string{"payload-bucket", "max-payload-bytes", "max-run-payload-bytes"}

// checkHostOnly refuses a flag given to a command that has no use for
// it: --retention but to serve and reconcile, a host setting
// (hostOnlyFlags) with --host.
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
	for _, name := range hostOnlyFlags {
		if g.changed(name) {
			return usagef("--%s is a setting of the host (sortie serve), and --host %s talks to one: set it there, or leave --host out", name, g.hostURL)
		}
	}
	return nil
}

// changed reports whether the command was given flag name.
func (g *globals) changed(name string) bool {
	f := g.command.Flags().Lookup(name)
	return f != nil && f.Changed
}

// clearHostOnlyEnv drops the host settings read from the environment
// (hostOnlyFlags) when the command talks to --host.
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
