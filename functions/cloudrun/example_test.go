package cloudrun_test

import (
	"fmt"

	"github.com/sortie-run/sortie/functions/cloudrun"
)

// The container refuses to start without its control plane, naming the
// variable.
func ExampleLoadEnv() {
	env := map[string]string{cloudrun.EnvInvocation: `{"version":"sortie.invocation/v1"}`}
	_, err := cloudrun.LoadEnv(func(k string) string { return env[k] })
	fmt.Println(err)
	// Output: invalid SORTIE_SQLITE_PATH: the control plane's SQLite file is required
}
