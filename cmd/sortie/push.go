package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/httpengine"
)

// pushAPI is what the push commands call: the embedded control plane or
// the remote host.
type pushAPI interface {
	put(ctx context.Context, cfg *sortie.PushConfig) (*sortie.PushConfig, error)
	GetPushConfig(ctx context.Context, run sortie.RunID, id string) (*sortie.PushConfig, error)
	ListPushConfigs(ctx context.Context, run sortie.RunID) ([]sortie.PushConfig, error)
	DeletePushConfig(ctx context.Context, run sortie.RunID, id string) error
}

type localPush struct{ sortie.PushStore }

func (l localPush) put(ctx context.Context, cfg *sortie.PushConfig) (*sortie.PushConfig, error) {
	return l.PutPushConfig(ctx, cfg, time.Now().UnixMilli())
}

type remotePush struct{ *httpengine.Engine }

func (r remotePush) put(ctx context.Context, cfg *sortie.PushConfig) (*sortie.PushConfig, error) {
	return r.PutPushConfig(ctx, cfg)
}

// withPush runs fn with the push API of the embedded or remote host.
func (g *globals) withPush(fn func(p pushAPI) error) error {
	return g.withHost(func(t *target) error {
		if t.remote != nil {
			return fn(remotePush{t.remote})
		}
		return fn(localPush{t.h.ControlPlane()})
	})
}

func newPushCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "push",
		Short: "Manage a run's push webhooks (delivered, signed, by sortie serve)",
		Long: `A run's push configurations are webhooks its state changes are POSTed to, signed
per Standard Webhooks with the host's key (webhook-keys.json in the state directory
of sortie serve), at least once, with retries and backoff. Webhook URLs must pass the
destination policy (--allow-destination, '*' for any public host, and
--allow-destination-addrs); with none, every webhook URL is refused.`,
	}
	var cfg sortie.PushConfig
	set := &cobra.Command{
		Use: "set RUN_ID --id ID --url URL [--key-id K]", Short: "Create or replace a push configuration", Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.RunID = sortie.RunID(args[0]).Canonical()
			if err := cfg.Validate(); err != nil {
				return err
			}
			if g.hostURL == "" {
				if err := g.checkPushURL(cfg.URL); err != nil {
					return err
				}
			}
			return g.withPush(func(p pushAPI) error {
				out, err := p.put(cmd.Context(), &cfg)
				if err != nil {
					return err
				}
				printPush(g, []sortie.PushConfig{*out})
				if g.hostURL == "" && g.aws.table == "" {
					fmt.Fprintf(os.Stderr, "stored in %s: a sortie serve on this state directory delivers it (use --host to set it on a running host)\n", g.stateDir)
				}
				return nil
			})
		},
	}
	set.Flags().StringVar(&cfg.ID, "id", "default", "configuration ID within the run")
	set.Flags().StringVar(&cfg.URL, "url", "", "webhook URL (https unless --allow-http-destinations)")
	set.Flags().StringVar(&cfg.KeyID, "key-id", "", "signing key ID (the host's primary key when empty)")
	c.AddCommand(set, pushGetCmd(g), pushListCmd(g), pushDeleteCmd(g))
	return c
}

func (g *globals) checkPushURL(u string) error {
	p, err := g.dest.policy()
	if err != nil {
		return err
	}
	if err := p.Check(u); err != nil {
		return sortie.Invalidf("url", "refused by the destination policy: %v", err)
	}
	return nil
}

// configID is the configuration ID of get and delete: the second
// argument, else --id (default "default", as for set); both must agree.
func configID(args []string, flag string) (string, error) {
	if len(args) < 2 {
		return flag, nil
	}
	if flag != "default" && flag != args[1] {
		return "", usagef("the configuration ID is %q as an argument and %q as --id; give one", args[1], flag)
	}
	return args[1], nil
}

func pushGetCmd(g *globals) *cobra.Command {
	var id string
	c := &cobra.Command{Use: "get RUN_ID [ID | --id ID]", Short: "Print one push configuration", Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cid, err := configID(args, id)
			if err != nil {
				return err
			}
			return g.withPush(func(p pushAPI) error {
				cfg, err := p.GetPushConfig(cmd.Context(), sortie.RunID(args[0]).Canonical(), cid)
				if err == nil {
					printPush(g, []sortie.PushConfig{*cfg})
				}
				return err
			})
		}}
	c.Flags().StringVar(&id, "id", "default", "configuration ID within the run")
	return c
}

func pushListCmd(g *globals) *cobra.Command {
	return &cobra.Command{Use: "list RUN_ID", Short: "Print a run's push configurations", Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withPush(func(p pushAPI) error {
				cfgs, err := p.ListPushConfigs(cmd.Context(), sortie.RunID(args[0]).Canonical())
				if err == nil {
					printPush(g, cfgs)
				}
				return err
			})
		}}
}

func pushDeleteCmd(g *globals) *cobra.Command {
	var id string
	c := &cobra.Command{Use: "delete RUN_ID [ID | --id ID]", Short: "Delete a push configuration", Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cid, err := configID(args, id)
			if err != nil {
				return err
			}
			return g.withPush(func(p pushAPI) error {
				return p.DeletePushConfig(cmd.Context(), sortie.RunID(args[0]).Canonical(), cid)
			})
		}}
	c.Flags().StringVar(&id, "id", "default", "configuration ID within the run")
	return c
}

func printPush(g *globals, cfgs []sortie.PushConfig) {
	if g.jsonOut {
		for i := range cfgs {
			cfgs[i].SealedToken = nil // ciphertext of an A2A client's token: nothing to show
			printJSON(os.Stdout, &cfgs[i])
		}
		return
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tURL\tDELIVERED VERSION\tDONE\tLAST ERROR")
	for _, c := range cfgs {
		fmt.Fprintf(w, "%s\t%s\t%d\t%v\t%s\n", c.ID, c.URL, c.Delivery.DeliveredVersion, c.Delivery.Done, c.Delivery.LastError)
	}
	w.Flush()
}
