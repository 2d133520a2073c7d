package cloudrun_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	run "cloud.google.com/go/run/apiv2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/launchers/cloudrun"
)

// workerBin is the sortie-cloudrun binary TestMain builds: the real
// container the fake Admin API starts.
var workerBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sortie-cloudrun-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	workerBin = filepath.Join(dir, "sortie-cloudrun")
	build := exec.Command("go", "build", "-o", workerBin, "github.com/sortie-run/sortie/cmd/sortie-cloudrun")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "launchers/cloudrun tests: build sortie-cloudrun: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	stopDynamoLocal()
	return code
}

// rig is one test's real parts: a SQLite control plane, the fake Admin
// API whose containers report to it, and a Jobs launcher on the fake.
type rig struct {
	cp       *sqlite.ControlPlane
	fake     *fakeRun
	launcher *cloudrun.JobsLauncher
}

func newRig(tb testing.TB) *rig {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "sortie.db")
	cp, err := sqlite.Open(path, nil)
	if err != nil {
		tb.Fatalf("sqlite.Open(%s) = %v, want nil", path, err)
	}
	tb.Cleanup(func() { cp.Close() })
	fake := startFake(tb, path)
	return &rig{cp: cp, fake: fake, launcher: jobsLauncher(tb, fake)}
}

// jobsLauncher returns a new Jobs launcher on fake, with its own clients
// (as another process would have).
func jobsLauncher(tb testing.TB, fake *fakeRun) *cloudrun.JobsLauncher {
	tb.Helper()
	ctx := context.Background()
	opts := []option.ClientOption{option.WithEndpoint(fake.addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
	jobs, err := run.NewJobsClient(ctx, opts...)
	if err != nil {
		tb.Fatalf("NewJobsClient(%s) = %v, want nil", fake.addr, err)
	}
	execs, err := run.NewExecutionsClient(ctx, opts...)
	if err != nil {
		tb.Fatalf("NewExecutionsClient(%s) = %v, want nil", fake.addr, err)
	}
	tb.Cleanup(func() { jobs.Close(); execs.Close() })
	l, err := cloudrun.NewJobs(jobs, execs, cloudrun.JobsOptions{Job: testJob})
	if err != nil {
		tb.Fatalf("NewJobs(%s) = %v, want nil", testJob, err)
	}
	return l
}
