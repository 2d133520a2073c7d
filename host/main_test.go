package host_test

import (
	"os"
	"testing"

	"github.com/sortie-run/sortie/internal/testbin"
)

// sortieBin is the sortie binary TestMain builds: the worker command of
// the hosts that run attempts on warm workers.
var sortieBin string

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m, "github.com/sortie-run/sortie/cmd/sortie", &sortieBin))
}
