package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/httpengine"
)

// openRemote is the host at --host: commands run against its API exactly
// as on the embedded engine; the host reconciles and launches.
func (g *globals) openRemote(log *slog.Logger) (*host, error) {
	token, err := g.token()
	if err != nil {
		return nil, err
	}
	e, err := httpengine.New(g.hostURL, &httpengine.Options{Token: token})
	if err != nil {
		return nil, usagef("--host: %v", err)
	}
	return &host{client: sortie.NewClient(e, nil), log: log}, nil
}

// token is the API token: --token-file, else SORTIE_TOKEN, else none.
func (g *globals) token() (string, error) {
	if g.tokenFile == "" {
		return os.Getenv("SORTIE_TOKEN"), nil
	}
	b, err := readLimited(g.tokenFile, 4096)
	if err != nil {
		return "", usagef("--token-file: %v", err)
	}
	return strings.TrimSpace(string(b)), nil
}
