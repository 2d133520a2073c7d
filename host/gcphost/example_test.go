package gcphost_test

import (
	"context"
	"log"
	"log/slog"
	"net"
	"os"

	"github.com/sortie-run/sortie/functions"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/host/gcphost"
)

// The Cloud Run container's service mode, as cmd/sortie-cloudrun runs it.
func ExampleNewService() {
	ctx := context.Background()
	env, err := fncloudrun.LoadEnv(os.Getenv)
	if err != nil {
		log.Fatal(err)
	}
	cp, err := gcphost.OpenControlPlane(ctx, env)
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	w := &functions.Worker{Registry: builtin.Registry()}
	svc, err := gcphost.NewService(ctx, env, w, cp, builtin.Agents(), slog.Default())
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close()
	ln, err := net.Listen("tcp", ":"+env.Port)
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(svc.Serve(ctx, ln))
}
