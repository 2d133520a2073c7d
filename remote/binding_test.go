package remote_test

import (
	"testing"

	"github.com/sortie-run/sortie/remote"
	"github.com/sortie-run/sortie/remote/bindingtest"
)

func TestMemoryBindingsConformance(t *testing.T) {
	bindingtest.Run(t, func(testing.TB) remote.BindingStore { return &remote.MemoryBindings{} })
}
